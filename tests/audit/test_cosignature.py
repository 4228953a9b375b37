"""C2SP tlog-cosignature against published bytes: the spec's example, transparency-dev/formats' keys and timestamps,
and a real ML-DSA-44 signature made by torchwood (tests/vectors/README.md says where each comes from). Round trips
alone would pass with a signer and verifier wrong the same way; these break that tie. No Django."""

import base64
import json
import struct
from pathlib import Path

import pytest

from audit.verifier import cosignature, notes

VECTORS = json.loads((Path(__file__).parents[1] / "vectors/tlog-cosignature/vectors.json").read_text("utf-8"))
SPEC = VECTORS["spec_examples"]
FORMATS = VECTORS["transparency_dev_formats"]
TORCHWOOD = VECTORS["torchwood_mldsa_log"]
CHECKPOINT = "example.com/log\n5\n" + base64.b64encode(bytes(range(32))).decode() + "\n"


def test_it_builds_the_ed25519_message_of_the_spec_example():
    assert cosignature.ed25519_message(SPEC["timestamp"], SPEC["checkpoint_text"]) == SPEC["ed25519_message"].encode()


def test_it_reads_the_timestamp_of_the_spec_example_cosignature():
    assert cosignature.timestamp_of(SPEC["cosignature_line"]) == SPEC["cosignature_line_timestamp"]


@pytest.mark.parametrize("vector", FORMATS["timestamps"], ids=lambda v: v["test"])
def test_it_reads_cosignature_timestamps_as_transparency_dev_does(vector):
    assert cosignature.timestamp_of(f"{notes.DASH}w {vector['signature']}") == vector["timestamp"]


@pytest.mark.parametrize("vector", FORMATS["vkeys"], ids=lambda v: v["test"])
def test_it_reads_verifier_keys_as_transparency_dev_does(vector):
    if vector["valid"]:
        assert cosignature.parse_vkey(vector["vkey"]).kind == vector["kind"]
    else:
        with pytest.raises(cosignature.KeyFormatError):
            cosignature.parse_vkey(vector["vkey"])


def test_it_verifies_torchwoods_ml_dsa_44_checkpoint_signature():
    """torchwood signed this checkpoint with the `subtree/v1` message: this checks our message byte for byte."""
    key = cosignature.parse_vkey(TORCHWOOD["vkey"])
    _, text, lines = notes.read_checkpoint(TORCHWOOD["note"])
    assert (key.kind, key.key_id.hex(), len(key.public)) == (cosignature.MLDSA44, "b5df45c5", 1312)
    assert key.verifies(text, lines[0])


def test_it_refuses_torchwoods_signature_over_another_size():
    key = cosignature.parse_vkey(TORCHWOOD["vkey"])
    _, text, lines = notes.read_checkpoint(TORCHWOOD["note"])
    assert not key.verifies(text.replace("\n1\n", "\n2\n"), lines[0])


def test_it_lays_out_the_ml_dsa_message_as_the_spec_says():
    message = cosignature.mldsa_message("w.example/w1", 7, "example.com/log", 0, 5, bytes(32))
    assert message == (
        b"subtree/v1\n\x00" + b"\x0cw.example/w1" + struct.pack(">Q", 7) + b"\x0fexample.com/log"
        b"" + struct.pack(">QQ", 0, 5) + bytes(32)
    )


@pytest.mark.parametrize("algorithm", ["ed25519", "ml-dsa-44"])
def test_a_cosignature_verifies_with_its_verifier_key_only_over_its_checkpoint(algorithm):
    witness = cosignature.generate("witness.example/w1", algorithm)
    line = witness.cosign(CHECKPOINT, 1_700_000_000)
    key = cosignature.parse_vkey(witness.verifier().vkey)
    assert key.verifies(CHECKPOINT, line)
    assert cosignature.timestamp_of(line) == 1_700_000_000
    assert not key.verifies(CHECKPOINT.replace("\n5\n", "\n6\n"), line)
    other = cosignature.generate("witness.example/w1", algorithm).verifier()
    assert not other.matches(line) and not other.verifies(CHECKPOINT, line)


@pytest.mark.parametrize("algorithm", ["ed25519", "ml-dsa-44"])
def test_a_changed_timestamp_breaks_the_cosignature(algorithm):
    witness = cosignature.generate("witness.example/w1", algorithm)
    name, encoded = witness.cosign(CHECKPOINT, 1_700_000_000)[len(notes.DASH) :].split(" ")
    raw = base64.b64decode(encoded)
    moved = raw[:4] + struct.pack(">Q", 1_700_000_001) + raw[12:]
    assert not witness.verifier().verifies(CHECKPOINT, f"{notes.DASH}{name} {base64.b64encode(moved).decode()}")


def test_the_ed25519_cosignature_covers_extension_lines_and_ml_dsa_does_not():
    """As the spec says: cosignature/v1 signs the note text, the ML-DSA message only origin, size and root."""
    extended = CHECKPOINT + "extension\n"
    for algorithm, covered in (("ed25519", True), ("ml-dsa-44", False)):
        witness = cosignature.generate("witness.example/w1", algorithm)
        line = witness.cosign(extended, 1_700_000_000)
        assert witness.verifier().verifies(CHECKPOINT + "another\n", line) is not covered


def test_ml_dsa_commits_to_the_witness_name_and_ed25519_does_not():
    for algorithm, committed in (("ed25519", False), ("ml-dsa-44", True)):
        witness = cosignature.generate("witness.example/w1", algorithm)
        renamed = cosignature.VerifierKey("witness.example/w2", witness.kind, witness.verifier().public)
        raw = base64.b64decode(witness.cosign(CHECKPOINT, 1_700_000_000).rsplit(" ", 1)[1])
        line = f"{notes.DASH}witness.example/w2 {base64.b64encode(renamed.key_id + raw[4:]).decode()}"
        assert renamed.verifies(CHECKPOINT, line) is not committed


def test_a_key_file_line_reads_back_as_the_same_key():
    for algorithm in cosignature.ALGORITHMS:
        witness = cosignature.generate("witness.example/w1", algorithm)
        assert cosignature.parse_private_key(witness.private_key) == witness
        assert witness.private_key.startswith(f"PRIVATE+KEY+witness.example/w1+{witness.verifier().key_id.hex()}+")


def test_a_key_file_line_with_another_keys_id_is_refused():
    witness = cosignature.generate("witness.example/w1", "ed25519")
    line = witness.private_key.replace(witness.verifier().key_id.hex(), "00000000")
    with pytest.raises(cosignature.KeyFormatError, match="not its key's"):
        cosignature.parse_private_key(line)


def test_a_note_with_a_failing_signature_by_a_known_key_is_malformed():
    """signed-note: a line naming a known key must verify; the witness answers such a note 403."""
    witness = cosignature.generate("witness.example/w1", "ed25519")
    good = witness.cosign(CHECKPOINT, 1_700_000_000)
    bad = witness.cosign(CHECKPOINT.replace("\n5\n", "\n6\n"), 1_700_000_000)
    assert cosignature.verified_by(CHECKPOINT, [good], [witness.verifier()]) == [witness.verifier()]
    with pytest.raises(notes.NoteError, match="does not verify"):
        cosignature.verified_by(CHECKPOINT, [good, bad], [witness.verifier()])


def test_a_witness_never_cosigns_without_a_time():
    with pytest.raises(ValueError, match="states a time"):
        cosignature.generate("witness.example/w1", "ed25519").cosign(CHECKPOINT, 0)


def test_a_witness_counts_once_whatever_number_of_its_keys_cosigned():
    ed, ml = (cosignature.generate("witness.example/w1", a) for a in ("ed25519", "ml-dsa-44"))
    lines = [ed.cosign(CHECKPOINT, 1_700_000_000), ml.cosign(CHECKPOINT, 1_700_000_005)]
    found = cosignature.cosigners(CHECKPOINT, lines, [ed.verifier(), ml.verifier()])
    assert found == {"witness.example/w1": 1_700_000_005}
