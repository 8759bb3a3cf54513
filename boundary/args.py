"""Scenario fields as command-line flags (`--max-model-len` ⇄ `max_model_len`), shared by every subcommand."""

from __future__ import annotations

import argparse
import re
import typing
from pathlib import Path

from pydantic import ValidationError

from calc.errors import UNFORESEEN, InputError, first_field, message_of, short, unforeseen
from calc.scenario import Scenario, field_constraints


def flag(field: str) -> str:
    return "--" + field.replace("_", "-")


class Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs) -> None:  # no prefixes: --max-conc is no flag (a script's typo stays one)
        super().__init__(*args, **(kwargs | {"allow_abbrev": False}))

    def error(self, message: str) -> typing.NoReturn:  # one line, exit 2 (argparse prints usage too)
        self.exit(2, f"error: {' '.join(message.split())[:500]}\n")


def _is_bool(name: str) -> bool:
    return Scenario.model_fields[name].annotation is bool


def help_text(info) -> str:
    """A field's docstring's first paragraph as one line (its first line alone cut sentences short: 'default: the
    engine'), safe for argparse (which %-formats help strings)."""
    return " ".join((info.description or "").split("\n\n")[0].split()).replace("%", "%%")


def with_default(text: str, info) -> str:
    """The help text and the field's default where it has a plain one the text does not already state."""
    d = info.default
    states = re.search(r"\bdefaults?\s*(:|is\b)|\(default", text.lower())  # the text states its own default
    if d is None or isinstance(d, (dict, list, tuple)) or states or repr(d) == "PydanticUndefined":
        return text
    shown = ("on" if d else "off") if isinstance(d, bool) else f"{d:g}" if isinstance(d, float) else str(d) or "none"
    return f"{text} (default: {shown})"


def add_scenario_flags(p: argparse.ArgumentParser, skip: tuple[str, ...] = ()) -> None:
    for name, info in Scenario.model_fields.items():
        if name in ("model", "gpu") or name in skip:
            continue
        if _is_bool(name):
            p.add_argument(flag(name), dest=name, action=argparse.BooleanOptionalAction, default=None,
                           help=with_default(help_text(info), info))  # fmt: skip
        else:
            p.add_argument(flag(name), dest=name, default=None, metavar=name.upper(),
                           help=with_default(help_text(info), info))  # fmt: skip


def add_spec_flags(p: argparse.ArgumentParser, *, model_default: str = "", gpu_default: str = "",
                   gpu_help: str = "accelerator spec id") -> None:  # fmt: skip
    """--model and --gpu; `model_default` / `gpu_default`: what stands in when they are not given, where that is not
    the Scenario's default (reconcile reads both from its log); `gpu_help`: what --gpu does there."""
    fields = Scenario.model_fields
    p.add_argument("--model", dest="model", default=None, help="model spec id, or a model YAML / config.json path "
                   f"(default: {model_default or fields['model'].default})")  # fmt: skip
    p.add_argument("--gpu", dest="gpu", default=None,
                   help=gpu_help if "(default" in gpu_help else f"{gpu_help} (default: {gpu_default or fields['gpu'].default})")


MAX_NUMBER_CHARS = 40  # "1e15", "0.000001", "10000000000000000": a number here needs far fewer characters


def _is_number(name: str) -> bool:
    """int and float fields, optional or not, and Literal sets of ints (block_size)."""

    def leaves(t) -> list:
        args = typing.get_args(t)
        if typing.get_origin(t) is typing.Literal:
            return [type(a) for a in args]
        return [x for a in args for x in leaves(a)] if args else [t]

    return any(t in (int, float) for t in leaves(Scenario.model_fields[name].annotation))


def _check_lengths(data: dict) -> None:
    """A number thousands of digits long is refused by its flag's name before any parser sees it (int() raises past
    4,300 digits without saying which input; pydantic's message does not say the input was too long)."""
    for name, value in data.items():
        if isinstance(value, str) and len(value) > MAX_NUMBER_CHARS and _is_number(name):
            raise InputError(flag(name), f"number too long ({len(value):,} characters; at most {MAX_NUMBER_CHARS})")


def scenario_data(ns: argparse.Namespace) -> dict:
    """The Scenario fields given on the command line, as text (a --model path becomes a custom model)."""
    from calc.custom import encode_custom_model
    from calc.loader import load_model_file

    data = {k: v for k, v in vars(ns).items() if k in Scenario.model_fields and v is not None}
    _check_lengths(data)
    model = data.get("model")
    if model == "custom" and not data.get("custom_model"):
        raise InputError("--custom-model", "--model custom needs the model itself: --custom-model TEXT (a link's "
                                           "custom_model), or give a config.json path to --model instead")  # fmt: skip
    if data.get("custom_model") and model != "custom":  # it would be ignored: the plan would be another model's
        raise InputError("custom_model", "describes the model only with --model custom (a config file's path may be "
                         "given to --model instead)")  # fmt: skip
    if model and (model.endswith((".json", ".yaml", ".yml")) or "/" in model):
        try:
            spec = load_model_file(Path(model))
        except InputError:
            raise
        except UNFORESEEN as e:  # a shape no reader foresaw: one line naming the file, exit 2, not a traceback
            raise InputError("model", f"{short(model, 200)}: {unforeseen(e)}") from None
        data["model"] = "custom"
        data["custom_model"] = encode_custom_model(spec)
    return data


def validate_scenario(data: dict) -> Scenario:
    """Strings from the command line, validated by the Scenario (lax mode coerces '8192' to 8192)."""
    try:
        return Scenario.model_validate(data)
    except ValidationError as e:
        err = e.errors(include_url=False)[0]
        name = first_field(e)
        shown = flag(name) if name in Scenario.model_fields else name
        raise InputError(shown, allowed_text(name, err)) from None


def scenario_from_args(ns: argparse.Namespace) -> Scenario:
    return validate_scenario(scenario_data(ns))


def _bound(v: float) -> str:
    """1000000 → '1,000,000', 0.01 → '0.01', 1e-06 → '1e-06'."""
    return f"{v:,.0f}" if float(v).is_integer() else f"{v:g}"


def bounds_text(name: str) -> str:
    """'≥ 1, ≤ 64': a numeric Scenario field's constraints as a person reads them ('' for other fields)."""
    bounds = []
    for meta in field_constraints(name) if name in Scenario.model_fields else []:  # optional fields' too
        for attr, sym in (("ge", "≥"), ("gt", ">"), ("le", "≤"), ("lt", "<")):
            if getattr(meta, attr, None) is not None:
                bounds.append(f"{sym} {_bound(getattr(meta, attr))}")
    return ", ".join(bounds)


def allowed_text(name: str, err: dict) -> str:
    msg = message_of(err)
    bounds = bounds_text(name)
    got = err.get("input")
    got_txt = f" (got {str(got)[:40]!r})" if got is not None and not isinstance(got, dict) else ""
    allowed = f"; allowed: {bounds}" if bounds and "allowed" not in msg else ""
    return f"{msg}{got_txt}{allowed}"
