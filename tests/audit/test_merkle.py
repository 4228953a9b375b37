"""RFC 9162 tree hashing and proofs, held to a brute-force tree built straight from the RFC's definitions
(the verifier shipped in packages is this very module: tests/audit/test_verifier_build.py)."""

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from audit.verifier import merkle


def brute_root(data: list[bytes]) -> bytes:
    """MTH(D[n]) as RFC 9162 section 2.1.1 defines it, recursively over the records' bytes."""
    if not data:
        return hashlib.sha256(b"").digest()
    if len(data) == 1:
        return hashlib.sha256(b"\x00" + data[0]).digest()
    k = 1
    while k * 2 < len(data):
        k *= 2
    return hashlib.sha256(b"\x01" + brute_root(data[:k]) + brute_root(data[k:])).digest()


def records(n: int) -> list[bytes]:
    return [f"record {i}".encode() for i in range(n)]


def leaves(n: int) -> list[bytes]:
    return [merkle.leaf_hash(d) for d in records(n)]


def test_it_gives_the_rfc_root_of_every_size_up_to_70():
    for n in range(71):
        assert merkle.root(leaves(n)) == brute_root(records(n)), n


def test_it_gives_every_prefix_root_in_one_pass():
    tree = leaves(100)
    assert merkle.prefix_roots(tree, range(1, 101)) == {n: brute_root(records(n)) for n in range(1, 101)}


def test_it_proves_against_a_prefix_of_the_leaves_it_holds():
    tree = merkle.Tree(leaves(30), size=21)
    assert tree.root() == brute_root(records(21))
    assert merkle.verify_inclusion(leaves(30)[20], 20, 21, tree.inclusion_proof(20), tree.root())
    assert merkle.verify_consistency(13, 21, brute_root(records(13)), tree.root(), tree.consistency_proof(13))


def test_it_matches_a_published_rfc_6962_test_vector():
    # certificate-transparency-go's merkle tests: the root of the empty tree and of one empty leaf.
    assert merkle.root([]).hex() == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert merkle.root([merkle.leaf_hash(b"")]).hex() == (
        "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d"
    )


def test_it_proves_every_leaf_of_every_size_up_to_40():
    for n in range(1, 41):
        tree, top = leaves(n), brute_root(records(n))
        for i in range(n):
            proof = merkle.inclusion_proof(tree, i)
            assert merkle.verify_inclusion(tree[i], i, n, proof, top), (n, i)


def test_it_proves_every_prefix_of_every_size_up_to_40():
    for n in range(1, 41):
        tree = leaves(n)
        for m in range(1, n + 1):
            proof = merkle.consistency_proof(tree, m)
            args = (m, n, brute_root(records(m)), brute_root(records(n)), proof)
            assert merkle.verify_consistency(*args), (m, n)


def flip(proof: list[bytes], at: int) -> list[bytes]:
    changed = bytearray(proof[at])
    changed[0] ^= 1
    return [*proof[:at], bytes(changed), *proof[at + 1 :]]


@settings(max_examples=300, deadline=None)
@given(st.integers(2, 300).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n - 1), st.integers(0, 64))))
def test_it_refuses_an_inclusion_proof_with_any_change(case):
    n, i, pick = case
    tree = leaves(n)
    top, proof = merkle.root(tree), merkle.inclusion_proof(tree, i)
    for verify in (merkle.verify_inclusion,):
        assert verify(tree[i], i, n, proof, top)
        assert not verify(tree[i], i, n, flip(proof, pick % len(proof)), top)
        assert not verify(tree[(i + 1) % n], i, n, proof, top)  # another record under this index
        assert not verify(tree[i], (i + 1) % n, n, proof, top)
        assert not verify(tree[i], i, n, proof[:-1], top)


@settings(max_examples=300, deadline=None)
@given(st.integers(2, 300).flatmap(lambda n: st.tuples(st.just(n), st.integers(1, n - 1), st.integers(0, 64))))
def test_it_refuses_a_consistency_proof_with_any_change(case):
    n, m, pick = case
    tree = leaves(n)
    old, new, proof = merkle.root(tree[:m]), merkle.root(tree), merkle.consistency_proof(tree, m)
    forked = merkle.root([*tree[: m - 1], merkle.leaf_hash(b"rewritten"), *tree[m:]])
    for verify in (merkle.verify_consistency,):
        assert verify(m, n, old, new, proof)
        assert not verify(m, n, old, new, flip(proof, pick % len(proof)))
        assert not verify(m, n, old, forked, proof)  # the history was rewritten under the old head
        assert not verify(m, n, merkle.leaf_hash(b"other"), new, proof)


def test_it_refuses_proofs_for_sizes_the_tree_lacks():
    tree = leaves(5)
    for bad in (lambda: merkle.inclusion_proof(tree, 5), lambda: merkle.consistency_proof(tree, 0)):
        try:
            bad()
        except merkle.ProofError:
            continue
        raise AssertionError("no ProofError")
    assert not merkle.verify_consistency(6, 5, merkle.root(tree), merkle.root(tree), [])


def stored(n: int) -> dict[merkle.Subtree, bytes]:
    """Every complete subtree's hash of a log of n records (level 0: the leaves), as the ledger stores them."""
    return {(level, k): h for level, k, h in merkle.closed_subtrees(0, [], leaves(n))}


def test_the_stored_subtrees_are_the_rfc_roots_of_their_leaves():
    for (level, k), h in stored(70).items():
        assert h == brute_root(records(70)[k << level : (k + 1) << level]), (level, k)
    assert len(stored(70)) == 70 + 35 + 17 + 8 + 4 + 2 + 1


def test_leaves_appended_at_any_size_complete_the_subtrees_the_whole_log_has():
    whole = stored(70)
    for start in range(71):
        frontier = [whole[part] for part in merkle.subtrees(0, start)]
        made = {(level, k): h for level, k, h in merkle.closed_subtrees(start, frontier, leaves(70)[start:])}
        assert made == {(level, k): h for (level, k), h in whole.items() if (k + 1) << level > start}, start


def test_it_proves_from_the_subtrees_it_needs_what_it_proves_from_every_leaf():
    hashes = stored(70)
    for n in range(1, 71):
        tree = merkle.Tree(leaves(70), size=n)
        assert merkle.StoredTree(n, {p: hashes[p] for p in merkle.needs(n, root=True)}).root() == tree.root(), n
        for m in range(n):
            given = {p: hashes[p] for p in merkle.needs(n, leaves=[m])}  # only these: a missing one is a KeyError
            assert merkle.StoredTree(n, given).inclusion_proof(m) == tree.inclusion_proof(m), (m, n)
        for m in range(1, n + 1):
            given = {p: hashes[p] for p in merkle.needs(n, firsts=[m])}
            assert merkle.StoredTree(n, given).consistency_proof(m) == tree.consistency_proof(m), (m, n)


def test_a_proof_in_a_million_leaves_needs_a_few_dozen_stored_hashes():
    n = 1_000_003
    assert len(merkle.needs(n, leaves=[n - 1])) <= 2 * n.bit_length()
    assert len(merkle.needs(n, leaves=[555_555], firsts=[777_777], root=True)) <= 3 * n.bit_length()


def test_it_refuses_a_stored_proof_outside_the_tree():
    for ask in ({"leaves": [5]}, {"firsts": [0]}, {"firsts": [6]}):
        with pytest.raises(merkle.ProofError):
            merkle.needs(5, **ask)
