"""The data-parallel lockstep in the scheduler simulation: every MoE layer waits for every rank, so one rank's
decode-only steps last as long as a busy peer's prompt step whenever one runs meanwhile (calc.engine_cycle.
lockstep_share is its closed form). The simulation plays one rank; its peers are taken to run alike, so the chance
that some peer runs a prompt step is π = 1 − (1 − f)^peers, f this rank's own recent share of prompt steps."""

from __future__ import annotations

from calc.sim_engine import StepFn


def lockstep_step(own: StepFn, pi: float, prompt_step_s: float, *, mixed: bool) -> StepFn:
    """A decode-only step when, with chance `pi`, a busy peer runs a prompt step of `prompt_step_s` meanwhile:
    vLLM's peer step carries this rank's decodes, so the rank waits for what it takes beyond its own; SGLang's pauses
    them, so the rank waits for all of it."""
    def step(p: float, pairs: float, n: int, ctx: float, seqs: int = 1) -> float:
        t = own(p, pairs, n, ctx, seqs)
        return t + pi * (max(0.0, prompt_step_s - t) if mixed else prompt_step_s)

    return step


class Lockstep:
    """One rank's record of its prompt steps: f, their share of its recent steps (an average over `horizon` steps,
    one output length), and the last one's time, which its peers' are taken to be like."""

    def __init__(self, peers: float, horizon: float) -> None:
        self.peers, self.decay = peers, 1.0 - 1.0 / max(1.0, horizon)
        self.share, self.prompt_step_s = 0.0, 0.0

    def prompt_step(self, dt: float) -> None:
        if self.peers:
            self.share = self.share * self.decay + (1.0 - self.decay)
            self.prompt_step_s = dt

    def decode_steps(self, k: int) -> None:
        if self.peers:
            self.share *= self.decay**k

    def step_fn(self, own: StepFn, *, prompts_left: bool, mixed: bool) -> StepFn:
        """The step function of the rank's decode-only steps: its own where no peer is busy, where it has seen no
        prompt step, or where it has no prompt left to send or prefill (its peers, alike, have none either)."""
        if not (self.peers and self.share and self.prompt_step_s and prompts_left):
            return own
        return lockstep_step(own, 1.0 - (1.0 - self.share) ** self.peers, self.prompt_step_s, mixed=mixed)
