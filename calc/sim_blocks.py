"""The scheduler simulation's block accounting (calc.scheduler._Sim inherits it): blocks one request holds at a
token count, read as a function of ⌈tokens / block_size⌉, and the decoders' blocks at a decode step in one numpy
gather over their `a` values (tokens held after step D = a + D)."""

from __future__ import annotations

import numpy as np


class BlockBook:
    """Block counts of the running requests. Expects of the simulation: cfg (blocks_for), bs, _memo, prompt, out,
    dec, partial, pos, and the decoder array (_a_buf, _a_who, _a_at, _h_np) it sets up."""

    def blk(self, tokens: int) -> int:
        m = -(-tokens // self.bs)
        b = self._memo.get(m)
        if b is None:
            b = self._memo[m] = self.cfg.blocks_for(m * self.bs)
        return b

    def _decoder_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """a of every decoder, and blocks_for by block index m (blocks_for(t) = table[⌈t / block_size⌉])."""
        if self._h_np is None:
            top = -(-max(x + y for x, y in zip(self.prompt, self.out, strict=True)) // self.bs) + 1
            self._h_np = np.array([self.blk(m * self.bs) for m in range(top + 1)], dtype=np.int64)
        return self._a_buf[: len(self._a_at)], self._h_np

    def _a_add(self, r: int, a: int) -> None:
        i = self._a_at[r] = len(self._a_at)
        self._a_buf[i], self._a_who[i] = a, r

    def _a_drop(self, r: int) -> None:
        """O(1), where rebuilding the array from `dec` at each change cost 0.23 s of a 5,000-running run."""
        i, last = self._a_at.pop(r), len(self._a_at)
        if i != last:
            moved = self._a_who[last]
            self._a_buf[i], self._a_who[i], self._a_at[moved] = self._a_buf[last], moved, i

    def b_dec(self, d: int) -> int:
        """Blocks the decoders hold after step d: Σ blocks_for(a + d), one numpy gather."""
        if not self.dec:
            return 0
        a, table = self._decoder_arrays()
        return int(table[(a + (d + self.bs - 1)) // self.bs].sum())

    def b_partial(self, chunks: dict[int, int] | None = None) -> int:
        chunks = chunks or {}
        return sum(self.blk(self.pos[r] + chunks.get(r, 0)) for r in self.partial)

