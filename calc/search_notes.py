"""The search's notes on prices, currencies and the kinds of figure its cheapest rests on (calc.search)."""

from __future__ import annotations

import numpy as np

from calc.accuracy import BANDED_RIDGE_FLOP_PER_BYTE, low_ridge
from calc.catalog import Catalog
from calc.resolve import beyond_fitted, for_other_gpu
from calc.scenario import Scenario
from calc.specs import ModelSpec
from calc.weights import weight_format


def extrapolation_note(s: Scenario, catalog: Catalog, in_flight: float) -> tuple[str, ...]:
    """Where the cheapest runs more requests at once than the runs its engine release's costs were fitted on."""
    beyond = beyond_fitted(s, catalog, in_flight)
    if beyond is None:
        return ()
    engine, older = beyond
    return (f"the cheapest runs {in_flight:,.0f} in flight per replica, past the {engine.fitted_concurrency} of the runs "
            f"{engine.label}'s fixed costs were fitted on; {older.label}'s costs (engine_version {older.since}) are the "
            "slower bound and may pick another deployment",)  # fmt: skip


def prices(s: Scenario, catalog: Catalog, gpu_ids) -> tuple[np.ndarray, tuple[str, ...]]:
    """Price per GPU-hour and its currency: the scenario's own price for its own GPU, the spec's for the others."""
    moved = [for_other_gpu(s, gid) for gid in gpu_ids]
    prices = [t.gpu_hour_price or catalog.gpus[t.gpu].price_per_gpu_hour for t in moved]
    currencies = tuple(t.currency if t.gpu_hour_price else catalog.gpus[t.gpu].price_currency for t in moved)
    return np.array(prices, dtype=float), currencies


def price_notes(s: Scenario, searched) -> tuple[str, ...]:
    """A price or currency set for the scenario's GPU reaches only that GPU: say so when it cannot apply."""
    if s.gpu_hour_price is not None and s.gpu not in searched:
        return (f"gpu_hour_price {s.gpu_hour_price:g} {s.currency} is the price of the scenario's GPU ({s.gpu}), which "
                "this search does not include: the searched GPUs are priced from their specs (set gpu to one of them)",)  # fmt: skip
    if s.currency != "USD" and s.gpu_hour_price is None:
        return (f"currency {s.currency} applies to gpu_hour_price, which is not set: costs use each GPU spec's "
                "reference price, in its own currency",)  # fmt: skip
    return ()


def estimated_price(s: Scenario, catalog: Catalog, gid: str) -> bool:
    """The GPU is priced at its spec's own estimate (its `derived` list), not a published rate nor the scenario's."""
    return not (gid == s.gpu and s.gpu_hour_price is not None) and "price_per_gpu_hour" in catalog.gpus[gid].derived


def derived_price_note(s: Scenario, catalog: Catalog, gid: str | None) -> tuple[str, ...]:
    """The cheapest GPU's reference price is the spec's own estimate, not a published rate (its `derived` list):
    a recommendation that rests on it says so."""
    if gid is None or not estimated_price(s, catalog, gid):
        return ()
    g = catalog.gpus[gid]
    return (f"the cheapest GPU's price ({g.name}, {g.price_per_gpu_hour:g} {g.price_currency} per GPU-hour) is an "
            f"estimate, not a published rate ({g.price_source.split(':')[0][:80]}): set gpu {gid} and gpu_hour_price "
            "(--gpu-hour-price) to your quote before relying on it",)  # fmt: skip


def low_ridge_note(catalog: Catalog, gid: str | None) -> tuple[str, ...]:
    """The cheapest GPU is a compute-starved part (calc.accuracy.low_ridge): no held-out run describes its speed."""
    ridge = low_ridge(catalog.gpus[gid]) if gid is not None else None
    if ridge is None:
        return ()
    return (f"the cheapest GPU ({catalog.gpus[gid].name}) has a ridge of {ridge:.0f} FLOP a byte, far below the GPUs "
            f"the held-out error bands were measured on ({BANDED_RIDGE_FLOP_PER_BYTE} and up): its speed figures extrapolate; measure before "
            "buying",)  # fmt: skip


def quality_note(model: ModelSpec, dtype: str) -> tuple[str, ...]:
    """The cheapest stores weights in fewer bytes than the checkpoint does: its price is not the same model's."""
    own, chosen = weight_format(model, "auto"), weight_format(model, dtype)
    if chosen.linear_bytes >= own.linear_bytes and chosen.expert_bytes >= own.expert_bytes:
        return ()
    return (f"the cheapest serves the weights as {chosen.label} where the checkpoint is {own.label}: quantizing "
            "changes the model's output quality, which this planner does not measure; evaluate that checkpoint, or "
            "search dtype auto alone for the checkpoint's own precision",)  # fmt: skip


def cheapest_in_one_currency(cheap_first: np.ndarray, currency: np.ndarray, ok: np.ndarray) -> int | None:
    """The cheapest configuration, among those priced in the currency most of the eligible ones are priced in: costs
    in two currencies are not converted, so a cheapest across them would compare numbers, not prices."""
    if not cheap_first.size:
        return None
    names, counts = np.unique(currency[ok], return_counts=True)
    main = names[np.argmax(counts)]
    return int(next(i for i in cheap_first if currency[i] == main))


def currency_notes(currencies: tuple[str, ...], gpu: np.ndarray, ok: np.ndarray) -> tuple[str, ...]:
    used = {currencies[x] for x in np.unique(np.tile(gpu, len(ok) // len(gpu))[ok])}
    if len(used) > 1:
        return (f"costs are in {', '.join(sorted(used))} and are not converted: the cheapest is named among the "
                "configurations priced in the currency most of them use; compare the others within theirs",)  # fmt: skip
    return ()


def what_blocks(r) -> dict | None:
    """Where the search lists nothing although some configurations serve: the limit that rules them out, in
    numbers. The budget: the cheapest per hour of those that meet the SLOs (WHY 6); max GPUs: the fewest GPUs of
    those (WHY 5); the SLOs: the lowest TTFT and the lowest TPOT any configuration reaches, one request at a time where
    not even that meets them (WHY 4). None where something is listed or nothing serves at all."""
    if r.cheapest is not None:
        return None
    why = r.why
    if (over := np.flatnonzero(why == 6)).size:
        i = int(over[np.argmin(r.cost_per_hour[over])])
        return {"limit": "budget", "configurations": int(over.size), "cost_per_hour": float(r.cost_per_hour[i]),
                "currency": r.currencies[r.grid.gpu[r.base(i)]], "gpu": r.grid.space.gpus[r.grid.gpu[r.base(i)]]}  # fmt: skip
    if (over := np.flatnonzero(why == 5)).size:
        i = int(over[np.argmin(r.gpus[over])])
        return {"limit": "max_gpus", "configurations": int(over.size), "gpus": int(r.gpus[i]),
                "gpu": r.grid.space.gpus[r.grid.gpu[r.base(i)]]}  # fmt: skip
    if (slow := np.flatnonzero(why == 4)).size:
        return {"limit": "slo", "configurations": int(slow.size), "best_ttft_s": float(r.ttft_s[slow].min()),
                "best_tpot_s": float(r.tpot_s[slow].min())}  # fmt: skip
    return None
