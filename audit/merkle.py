"""RFC 9162 (Certificate Transparency 2.0, as RFC 6962) Merkle tree hashing, with inclusion and consistency proofs.

Standard library only: the offline verifier (standalone_verifier.py) carries a copy of the verification half,
and tests hold the two to the same answers. A tree is given by its leaf hashes (leaf_hash of each record's
bytes), in log order; hashes are 32 raw bytes.
"""

import hashlib

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


def inclusion_proof(leaves: list[bytes], index: int) -> list[bytes]:
    """PATH(index, D[n]) for the tree of all `leaves`."""
    if not 0 <= index < len(leaves):
        raise ProofError(f"leaf {index} is not in a tree of size {len(leaves)}")
    return _path(index, leaves)


def _path(m: int, leaves: list[bytes]) -> list[bytes]:
    if len(leaves) == 1:
        return []
    k = _split(len(leaves))
    if m < k:
        return _path(m, leaves[:k]) + [root(leaves[k:])]
    return _path(m - k, leaves[k:]) + [root(leaves[:k])]


def consistency_proof(leaves: list[bytes], first: int) -> list[bytes]:
    """PROOF(first, D[n]): the tree of its first `first` leaves is a prefix of the tree of all `leaves`."""
    if not 0 < first <= len(leaves):
        raise ProofError(f"no consistency proof from size {first} to size {len(leaves)}")
    return _subproof(first, leaves, True)


def _subproof(m: int, leaves: list[bytes], whole: bool) -> list[bytes]:
    n = len(leaves)
    if m == n:
        return [] if whole else [root(leaves)]
    k = _split(n)
    if m <= k:
        return _subproof(m, leaves[:k], whole) + [root(leaves[k:])]
    return _subproof(m - k, leaves[k:], False) + [root(leaves[:k])]


def verify_inclusion(leaf: bytes, index: int, size: int, proof: list[bytes], root_hash: bytes) -> bool:
    """RFC 9162 section 2.1.3.2: `leaf` is leaf `index` of the tree of `size` whose root is `root_hash`."""
    if not 0 <= index < size:
        return False
    fn, sn, r = index, size - 1, leaf
    for p in proof:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            r = node_hash(r, p)
        fn, sn = fn >> 1, sn >> 1
    return sn == 0 and r == root_hash


def verify_consistency(first: int, second: int, first_root: bytes, second_root: bytes, proof: list[bytes]) -> bool:
    """RFC 9162 section 2.1.4.2: the tree of size `first` is a prefix of the tree of size `second`."""
    if first == second:
        return not proof and first_root == second_root
    if not 0 < first < second or not proof:
        return False
    path = [first_root, *proof] if first & (first - 1) == 0 else list(proof)
    fn, sn = first - 1, second - 1
    while fn & 1:
        fn, sn = fn >> 1, sn >> 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr, sr = node_hash(c, fr), node_hash(c, sr)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            sr = node_hash(sr, c)
        fn, sn = fn >> 1, sn >> 1
    return sn == 0 and fr == first_root and sr == second_root
