"""The witness (`python -m audit.verifier.witness serve`) as a real process over real HTTP: each answer of
tlog-witness add-checkpoint, its state surviving a restart, racing requests never moving it backwards, and logs
signed by other implementations (torchwood's vectors). No Django."""

import base64
import hashlib
import json
import threading
from pathlib import Path

import pytest

from audit.verifier import build, cosignature, notes
from audit.verifier import witness as witness_cli
from audit.verifier.witness_protocol import request_body, size_of_conflict
from tests.witnesses import Log, WitnessProcess, key_file

VECTORS = json.loads((Path(__file__).parents[1] / "vectors/tlog-cosignature/vectors.json").read_text("utf-8"))
NAME = "witness.example/w1"


@pytest.fixture
def log():
    return Log()


@pytest.fixture
def keys(tmp_path):
    return key_file(tmp_path / "witness.key", NAME, "ed25519", "ml-dsa-44")


@pytest.fixture
def witness(tmp_path, keys, log):
    process = WitnessProcess(tmp_path / "state", tmp_path / "witness.key", {log.origin: log.vkey})
    yield process
    process.stop()


def cosigned(answer, log, size, keys):
    """The cosignature lines of a 200 answer, each checked against the witness's verifier keys."""
    assert answer.status_code == 200, answer.text
    text = notes.checkpoint_text(log.origin, size, log.root(size))
    lines = answer.text.splitlines()
    assert answer.text.endswith("\n") and cosignature.verified_by(text, lines, keys) == keys
    return lines


def refused(answer, status, code):
    assert (answer.status_code, answer.text.split(":")[0]) == (status, code), answer.text
    return answer.text


def test_it_cosigns_a_first_checkpoint_with_each_of_its_keys(witness, log, keys):
    lines = cosigned(witness.add_checkpoint(log.request(0, 3)), log, 3, keys)
    assert len(lines) == 2 and all(cosignature.timestamp_of(line) > 0 for line in lines)


def test_it_cosigns_a_checkpoint_that_extends_the_one_it_holds(witness, log, keys):
    cosigned(witness.add_checkpoint(log.request(0, 3)), log, 3, keys)
    cosigned(witness.add_checkpoint(log.request(3, 10)), log, 10, keys)
    cosigned(witness.add_checkpoint(log.request(10, 10)), log, 10, keys)  # the same head again


def test_it_serves_the_latest_checkpoint_it_cosigned_with_every_signature(witness, log, keys):
    assert witness.checkpoint_of(log.origin).status_code == 404
    cosigned(witness.add_checkpoint(log.request(0, 4)), log, 4, keys)
    served = witness.checkpoint_of(log.origin).text
    checkpoint, text, lines = notes.read_checkpoint(served)
    assert (checkpoint.size, len(lines)) == (4, 3)
    assert notes.open_checkpoint(served, [log.key.public_key().public_bytes_raw()]).size == 4
    assert cosignature.verified_by(text, lines, keys) == keys


def test_an_unknown_log_is_404(witness, log):
    refused(witness.add_checkpoint(Log(origin="other.example/log").request(0, 3)), 404, "unknown_log")


def test_a_checkpoint_signed_by_another_key_is_403(witness, log):
    impostor = Log(origin=log.origin)
    refused(witness.add_checkpoint(impostor.request(0, 3)), 403, "unsigned_checkpoint")


def test_a_failing_signature_by_the_logs_key_is_403_even_beside_a_good_one(witness, log):
    good = log.checkpoint(3)
    line = good.splitlines()[-1]
    raw = base64.b64decode(line.rsplit(" ", 1)[1])
    broken = line.rsplit(" ", 1)[0] + " " + base64.b64encode(raw[:-1] + bytes([raw[-1] ^ 1])).decode()
    refused(witness.add_checkpoint(request_body(0, [], good + broken + "\n")), 403, "bad_log_signature")


def test_a_stale_old_size_is_409_with_the_witness_size(witness, log, keys):
    cosigned(witness.add_checkpoint(log.request(0, 5)), log, 5, keys)
    answer = witness.add_checkpoint(log.request(3, 8))
    assert answer.status_code == 409
    assert answer.headers["Content-Type"] == "text/x.tlog.size"
    assert answer.text == "5\n" and size_of_conflict(answer.content) == 5


def test_a_proof_that_does_not_verify_is_422(witness, log, keys):
    cosigned(witness.add_checkpoint(log.request(0, 5)), log, 5, keys)
    other = Log(origin=log.origin, key=log.key, prefix="rewritten")  # the same key, another history
    body = request_body(5, other.proof(5, 9), other.checkpoint(9))
    refused(witness.add_checkpoint(body), 422, "bad_proof")


def test_another_root_at_the_size_it_cosigned_is_422(witness, log, keys):
    cosigned(witness.add_checkpoint(log.request(0, 5)), log, 5, keys)
    rewritten = Log(origin=log.origin, key=log.key, prefix="rewritten")
    text = refused(witness.add_checkpoint(rewritten.request(5, 5)), 422, "conflicting_root")
    assert "history was rewritten" in text


def test_a_proof_from_size_zero_is_422(witness, log):
    refused(witness.add_checkpoint(request_body(0, log.proof(2, 5), log.checkpoint(5))), 422, "bad_proof")


def test_an_empty_tree_with_another_root_is_422(witness, log, keys):
    refused(witness.add_checkpoint(request_body(0, [], log.checkpoint(0, root=bytes(32)))), 422, "bad_empty_root")
    cosigned(witness.add_checkpoint(log.request(0, 0)), log, 0, keys)


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"new 0\n\n",
        b"old 01\n\nlog.example/test\n1\n",
        b"old 0\nnot a hash\n\n",
        b"old 0\n" + b"\n".join([base64.b64encode(bytes(32))] * 64) + b"\n\n",
        b"old 0\n\nlog.example/test\n1\nAAAA\n\n",
        b"\xff\xfe",
    ],
    ids=["empty", "no-old-line", "leading-zero", "bad-proof-line", "64-proof-lines", "not-a-note", "not-utf8"],
)
def test_a_malformed_request_is_400(witness, body):
    refused(witness.add_checkpoint(body), 400, "malformed_request")


def test_an_old_size_past_the_checkpoint_is_400(witness, log):
    text = refused(witness.add_checkpoint(request_body(6, [], log.checkpoint(5))), 400, "malformed_request")
    assert "larger than the checkpoint's size" in text


def test_a_restart_keeps_what_it_cosigned(witness, log, keys):
    cosigned(witness.add_checkpoint(log.request(0, 7)), log, 7, keys)
    witness.kill()  # no clean shutdown: the head was on disk before the answer
    witness.start()
    assert size_of_conflict(witness.add_checkpoint(log.request(0, 9)).content) == 7
    cosigned(witness.add_checkpoint(log.request(7, 9)), log, 9, keys)


def test_racing_requests_leave_it_at_the_largest_consistent_size(witness, log, keys):
    """Racers ask from the size they know and, told of a larger one by a 409, ask again from it (as a log does),
    unless it is past their own. Whatever the order, the witness ends at the largest: none moved it backwards."""
    cosigned(witness.add_checkpoint(log.request(0, 2)), log, 2, keys)
    for known, sizes in ((2, [3, 5, 8, 13, 21, 34]), (34, [35, 40, 50, 64, 65, 99])):
        outcomes = race(witness, log, known, sizes)
        assert size_of_conflict(witness.add_checkpoint(log.request(0, 1000)).content) == max(sizes)
        assert outcomes[max(sizes)] == 200 and set(outcomes.values()) <= {200, 409}


def race(witness, log, known, sizes) -> dict[int, int]:
    """{size: the status of its last answer} once one thread per size has asked at the same moment."""
    start, outcomes = threading.Barrier(len(sizes)), {}

    def ask(size):
        old = known
        start.wait()
        while True:
            answer = witness.add_checkpoint(log.request(old, size))
            held = size_of_conflict(answer.content) if answer.status_code == 409 else size
            if held >= size:
                outcomes[size] = answer.status_code
                return
            old = held

    threads = [threading.Thread(target=ask, args=(size,)) for size in sizes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcomes


def test_a_body_past_the_limit_is_413(witness):
    refused(witness.add_checkpoint(b"old 0\n" + b"A" * (1 << 20)), 413, "too_large")


def test_it_accepts_torchwoods_ml_dsa_signed_log(tmp_path, keys):
    vector = VECTORS["torchwood_mldsa_log"]
    origin = vector["note"].split("\n")[0]
    process = WitnessProcess(tmp_path / "state", tmp_path / "witness.key", {origin: vector["vkey"]})
    try:
        answer = process.add_checkpoint(request_body(0, [], vector["note"]))
    finally:
        process.stop()
    text = notes.read_checkpoint(vector["note"])[1]
    assert answer.status_code == 200 and cosignature.verified_by(text, answer.text.splitlines(), keys) == keys


def test_it_accepts_torchwoods_sigsum_log(tmp_path, keys):
    vector = VECTORS["torchwood_sigsum_log"]
    origin = vector["note"].split("\n")[0]
    vkey = cosignature.VerifierKey(origin, cosignature.ED25519_NOTE, bytes.fromhex(vector["public_key_hex"])).vkey
    process = WitnessProcess(tmp_path / "state", tmp_path / "witness.key", {origin: vkey})
    try:
        answer = process.add_checkpoint(request_body(0, [], vector["note"]))
    finally:
        process.stop()
    assert answer.status_code == 200 and len(answer.text.splitlines()) == 2


def test_it_runs_from_the_verifier_shipped_in_evidence_packages(tmp_path, log, keys):
    """An auditor holding any package's verify_evidence.pyz runs the same witness, with no portal source."""
    shipped = tmp_path / build.NAME
    shipped.write_bytes(build.build())
    process = WitnessProcess(
        tmp_path / "state",
        tmp_path / "witness.key",
        {log.origin: log.vkey},
        module=f"{build.PACKAGE}.witness",
        env={"PYTHONPATH": str(shipped)},
    )
    try:
        lines = cosigned(process.add_checkpoint(log.request(0, 3)), log, 3, keys)
    finally:
        process.stop()
    assert len(lines) == 2


def test_a_state_it_cannot_keep_is_500_and_nothing_is_cosigned(witness, log, tmp_path):
    (tmp_path / "state" / f"{hashlib.sha256(log.origin.encode()).hexdigest()}.json").mkdir()  # not a file
    text = refused(witness.add_checkpoint(log.request(0, 3)), 500, "internal_error")
    assert "nothing was cosigned" in text


def test_check_counts_the_witnesses_that_cosigned_a_served_checkpoint(witness, log, keys, tmp_path, capsys):
    cosigned(witness.add_checkpoint(log.request(0, 3)), log, 3, keys)
    note = tmp_path / "checkpoint.note"
    note.write_text(witness.checkpoint_of(log.origin).text)
    other = cosignature.generate("witness.example/w2", "ed25519").verifier().vkey  # a witness that did not cosign
    args = [
        "check",
        str(note),
        "--log",
        f"{log.origin}={log.vkey}",
        "--witness",
        keys[0].vkey,
        "--witness",
        keys[1].vkey,
    ]
    assert witness_cli.main([*args, "--witness", other, "--quorum", "1"]) == 0
    assert "OK: log.example/test at 3 leaves, cosigned by 1 of 2 witnesses (quorum 1): witness.example/w1 at " in (
        capsys.readouterr().out
    )
    assert witness_cli.main([*args, "--witness", other, "--quorum", "2"]) == 1
    assert capsys.readouterr().out.startswith("FAILED: log.example/test at 3 leaves, cosigned by 1 of 2 witnesses")


def test_check_refuses_a_note_the_log_did_not_sign(witness, log, keys, tmp_path, capsys):
    cosigned(witness.add_checkpoint(log.request(0, 3)), log, 3, keys)
    note = tmp_path / "checkpoint.note"
    note.write_text(witness.checkpoint_of(log.origin).text)
    stranger = Log(origin=log.origin)
    args = ["check", str(note), "--log", f"{log.origin}={stranger.vkey}", "--witness", keys[0].vkey]
    assert witness_cli.main(args) == 1
    assert (
        "FAILED: no signature by a key given for the log 'log.example/test' is on the checkpoint."
        in capsys.readouterr().out
    )


def test_check_refuses_a_quorum_no_one_can_meet_and_a_logs_key_given_as_a_witness(log, keys, tmp_path, capsys):
    note = tmp_path / "checkpoint.note"
    note.write_text(log.checkpoint(3))
    args = ["check", str(note), "--log", f"{log.origin}={log.vkey}"]
    assert witness_cli.main([*args, "--witness", keys[0].vkey, "--quorum", "2"]) == 1
    assert "witness: a quorum is 1 to the number of witnesses given (1), not 2" in capsys.readouterr().err
    assert witness_cli.main([*args, "--witness", log.vkey]) == 1
    assert "is a log's signed-note key (type 0x01), not a witness's cosignature key" in capsys.readouterr().err
