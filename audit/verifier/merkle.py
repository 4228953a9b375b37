"""RFC 9162 (Certificate Transparency 2.0, as RFC 6962) Merkle tree hashing, with inclusion and consistency proofs.

Standard library only. A tree is given by its leaf hashes (leaf_hash of each record's bytes), in log order;
hashes are 32 raw bytes. Verification follows transparency-dev/merkle's `proof` package (the reference the
C2SP witnesses use), so both accept and refuse the same proofs, its test vectors included.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator

HASH_SIZE = 32
EMPTY_ROOT = hashlib.sha256(b"").digest()


class ProofError(ValueError):
    """A proof asked for sizes or an index that the tree does not have."""


def leaf_hash(data: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def _split(n: int) -> int:
    """The largest power of two smaller than n (n > 1)."""
    return 1 << ((n - 1).bit_length() - 1)


def root(leaves: list[bytes]) -> bytes:
    """MTH(D[n]) of the leaf hashes."""
    if not leaves:
        return EMPTY_ROOT
    level = list(leaves)
    # Pairing left to right, carrying an odd last node up, gives the same tree as the recursive split.
    while len(level) > 1:
        paired = [node_hash(level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]
        level = paired + ([level[-1]] if len(level) % 2 else [])
    return level[0]


def prefix_roots(leaves: list[bytes], sizes: Iterable[int]) -> dict[int, bytes]:
    """The root of the tree of the first n leaves for each n in `sizes`, in one pass over the leaves."""
    wanted, stack, found = set(sizes), [], {}
    for n, leaf in enumerate(leaves, 1):
        stack.append((1, leaf))
        while len(stack) > 1 and stack[-1][0] == stack[-2][0]:  # two full subtrees of one size make one
            (size, right), (_, left) = stack.pop(), stack.pop()
            stack.append((2 * size, node_hash(left, right)))
        if n in wanted:
            top = stack[-1][1]
            for _, left in reversed(stack[:-1]):
                top = node_hash(left, top)
            found[n] = top
    return found


class _Proofs:
    """RFC 9162's proof shapes over `root(lo, hi)`, the root of leaves lo..hi-1, which a subclass supplies."""

    size: int

    def root(self, lo: int = 0, hi: int | None = None) -> bytes:
        raise NotImplementedError

    def inclusion_proof(self, index: int) -> list[bytes]:
        """PATH(index, D[size])."""
        if not 0 <= index < self.size:
            raise ProofError(f"leaf {index} is not in a tree of size {self.size}")
        return self._path(index, 0, self.size)

    def _path(self, m: int, lo: int, hi: int) -> list[bytes]:
        if hi - lo == 1:
            return []
        k = _split(hi - lo)
        if m < k:
            return self._path(m, lo, lo + k) + [self.root(lo + k, hi)]
        return self._path(m - k, lo + k, hi) + [self.root(lo, lo + k)]

    def consistency_proof(self, first: int) -> list[bytes]:
        """PROOF(first, D[size]): the tree of the first `first` leaves is a prefix of this one."""
        if not 0 < first <= self.size:
            raise ProofError(f"no consistency proof from size {first} to size {self.size}")
        return self._subproof(first, 0, self.size, True)

    def _subproof(self, m: int, lo: int, hi: int, whole: bool) -> list[bytes]:
        if m == hi - lo:
            return [] if whole else [self.root(lo, hi)]
        k = _split(hi - lo)
        if m <= k:
            return self._subproof(m, lo, lo + k, whole) + [self.root(lo + k, hi)]
        return self._subproof(m - k, lo + k, hi, False) + [self.root(lo, lo + k)]


class Tree(_Proofs):
    """The first `size` of `leaves`, remembering subtree roots: many proofs from one tree cost about one pass."""

    def __init__(self, leaves: list[bytes], size: int | None = None):
        self.leaves, self.size = leaves, len(leaves) if size is None else size
        self._roots: dict[tuple[int, int], bytes] = {}
        if not 0 <= self.size <= len(leaves):
            raise ProofError(f"a tree of size {self.size} needs that many leaves, not {len(leaves)}")

    def root(self, lo: int = 0, hi: int | None = None) -> bytes:
        hi = self.size if hi is None else hi
        if hi - lo <= 1:
            return self.leaves[lo] if hi > lo else EMPTY_ROOT
        if (lo, hi) not in self._roots:
            k = _split(hi - lo)
            self._roots[lo, hi] = node_hash(self.root(lo, lo + k), self.root(lo + k, hi))
        return self._roots[lo, hi]


Subtree = tuple[
    int, int
]  # (level, index): the complete subtree of leaves index * 2**level .. (index + 1) * 2**level - 1


def subtrees(lo: int, hi: int) -> list[Subtree]:
    """The complete subtrees that leaves lo..hi-1 split into, largest first: their hashes, folded from the right,
    are the range's root whenever lo is where RFC 9162's split puts a range (a multiple of its largest power of two
    below hi - lo), as in every proof."""
    found = []
    while lo < hi:
        level = (hi - lo).bit_length() - 1
        if lo:
            level = min(level, (lo & -lo).bit_length() - 1)
        found.append((level, lo >> level))
        lo += 1 << level
    return found


class StoredTree(_Proofs):
    """The tree of `size` leaves, given the hashes of the complete subtrees its proofs need (level 0: the leaves),
    which `needs` lists: proofs at any size from O(log size) stored hashes, never the leaves."""

    def __init__(self, size: int, hashes: dict[Subtree, bytes]):
        self.size, self.hashes = size, hashes

    def root(self, lo: int = 0, hi: int | None = None) -> bytes:
        parts = [self.hashes[part] for part in subtrees(lo, self.size if hi is None else hi)]
        if not parts:
            return EMPTY_ROOT
        top = parts[-1]
        for left in reversed(parts[:-1]):
            top = node_hash(left, top)
        return top


class _Wanted(StoredTree):
    """A tree that notes the subtrees a proof asks for, instead of hashing them."""

    def __init__(self, size: int):
        super().__init__(size, {})

    def root(self, lo: int = 0, hi: int | None = None) -> bytes:
        self.hashes.update(dict.fromkeys(subtrees(lo, self.size if hi is None else hi), b""))
        return b""


def needs(size: int, leaves: Iterable[int] = (), firsts: Iterable[int] = (), root: bool = False) -> set[Subtree]:
    """The complete subtrees a StoredTree of `size` needs for the inclusion proofs of `leaves`, the consistency
    proofs from the sizes in `firsts` and, with `root`, its root. ProofError for an index or size it lacks."""
    wanted = _Wanted(size)
    for index in leaves:
        wanted.inclusion_proof(index)
    for first in firsts:
        wanted.consistency_proof(first)
    if root:
        wanted.root()
    return set(wanted.hashes)


def closed_subtrees(start: int, frontier: list[bytes], leaves: Iterable[bytes]) -> Iterator[tuple[int, int, bytes]]:
    """(level, index, hash) of each complete subtree that `leaves`, appended at `start`, complete, in the order they
    complete them: each leaf (level 0), then the subtrees it closes. `frontier`: the hashes of subtrees(0, start), in
    that order (the complete subtrees of a log of `start` leaves that later leaves pair with)."""
    stack = [(level, h) for (level, _), h in zip(subtrees(0, start), frontier, strict=True)]
    for n, leaf in enumerate(leaves, start + 1):
        stack.append((0, leaf))
        yield 0, n - 1, leaf
        while len(stack) > 1 and stack[-1][0] == stack[-2][0]:  # two complete subtrees of one size make one
            (level, right), (_, left) = stack.pop(), stack.pop()
            stack.append((level + 1, node_hash(left, right)))
            yield level + 1, (n >> (level + 1)) - 1, stack[-1][1]


def inclusion_proof(leaves: list[bytes], index: int) -> list[bytes]:
    """PATH(index, D[n]) for the tree of all `leaves`."""
    return Tree(leaves).inclusion_proof(index)


def consistency_proof(leaves: list[bytes], first: int) -> list[bytes]:
    """PROOF(first, D[n]): the tree of its first `first` leaves is a prefix of the tree of all `leaves`."""
    return Tree(leaves).consistency_proof(first)


def _inner_size(index: int, size: int) -> int:
    return (index ^ (size - 1)).bit_length()


def _decompose(index: int, size: int) -> tuple[int, int]:
    """The number of a proof's hashes inside the perfect subtrees, and along the right border."""
    inner = _inner_size(index, size)
    return inner, bin(index >> inner).count("1")


def _chain_inner(seed: bytes, proof: list[bytes], index: int) -> bytes:
    for i, h in enumerate(proof):
        seed = node_hash(seed, h) if not (index >> i) & 1 else node_hash(h, seed)
    return seed


def _chain_inner_right(seed: bytes, proof: list[bytes], index: int) -> bytes:
    for i, h in enumerate(proof):
        if (index >> i) & 1:
            seed = node_hash(h, seed)
    return seed


def _chain_border_right(seed: bytes, proof: list[bytes]) -> bytes:
    for h in proof:
        seed = node_hash(h, seed)
    return seed


def verify_inclusion(leaf: bytes, index: int, size: int, proof: list[bytes], root_hash: bytes) -> bool:
    """RFC 9162 section 2.1.3.2: `leaf` is leaf `index` of the tree of `size` whose root is `root_hash`."""
    if not 0 <= index < size or len(leaf) != HASH_SIZE:
        return False
    inner, border = _decompose(index, size)
    if len(proof) != inner + border:
        return False
    return _chain_border_right(_chain_inner(leaf, proof[:inner], index), proof[inner:]) == root_hash


def verify_consistency(first: int, second: int, first_root: bytes, second_root: bytes, proof: list[bytes]) -> bool:
    """RFC 9162 section 2.1.4.2: the tree of size `first` is a prefix of the tree of size `second`."""
    if not 0 < first <= second:  # a proof from the empty tree is meaningless (transparency-dev/merkle refuses it)
        return False
    if first == second:
        return not proof and first_root == second_root
    if not proof:
        return False
    inner, border = _decompose(first - 1, second)
    shift = (first & -first).bit_length() - 1  # trailing zero bits
    inner -= shift
    seed, start = (first_root, 0) if first == 1 << shift else (proof[0], 1)
    if len(proof) != start + inner + border:
        return False
    proof, mask = proof[start:], (first - 1) >> shift
    old = _chain_border_right(_chain_inner_right(seed, proof[:inner], mask), proof[inner:])
    new = _chain_border_right(_chain_inner(seed, proof[:inner], mask), proof[inner:])
    return old == first_root and new == second_root
