"""The offline verifier's command line: `python3 verify_evidence.pyz PACKAGE.zip --public-keys signing-keys.json`.

No network, no Pagetrail. It prints what it checked and one verdict line:

- PASS (exit 0): every check passed against the pinned keys (or the package's own, with --trust-package-keys);
- FAIL (exit 1): the package fails a check; one line per problem names the file;
- UNPINNED (exit 3): every check passed, but only against the keys the package carries;
- FINDINGS (exit 4): the package is intact, but the portal's own newest verification run recorded failures
  for this scope, which the package carries; one line per finding. A package never passes over its own findings.
- exit 2: the command line was wrong (argparse's own status).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .report import Options, Report

PASS, FAIL, UNPINNED, FINDINGS = 0, 1, 3, 4
MAX_ARGUMENT_FILE = 16 * 1024 * 1024
MAX_LINES = 200  # problems printed: a crafted package can have a hundred thousand


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    print(f"Pagetrail evidence package {args.package}")
    try:
        from . import bounded, package
    except ImportError as exc:  # cryptography: a widely reviewed Ed25519, not one of our own
        print(f"FAIL\n  Ed25519 signatures need the cryptography package: pip install cryptography ({exc})")
        return FAIL
    try:
        options = _options(args, parser)
        with bounded.open_zip(args.package) as zf:
            report = package.verify(zf, options)
    except (bounded.Refused, OSError) as exc:
        print(f"FAIL\n  {args.package}: {exc}")
        return FAIL
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError, MemoryError) as exc:
        print(f"FAIL\n  {args.package}: verification stopped on a malformed part ({type(exc).__name__}: {exc})")
        return FAIL
    return _verdict(report, args)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="verify_evidence.pyz", description="Verify a Pagetrail evidence package.")
    parser.add_argument("package", help="the evidence package (.zip)")
    parser.add_argument("--public-keys", help="the portal's published key list (signing-keys.json) to trust")
    parser.add_argument(
        "--trust-package-keys",
        action="store_true",
        help="accept the package's own keys.json when no --public-keys is given (exit 0, not 3)",
    )
    parser.add_argument("--key-id", action="append", default=[], help="an HMAC key id recorded before Ed25519")
    parser.add_argument("--key", action="append", default=[], help="the HMAC key for the preceding --key-id")
    parser.add_argument("--key-file", help="a file of id=key lines")
    parser.add_argument("--origin", help="the log origin to expect (default: the one the checkpoint names)")
    parser.add_argument("--earlier-checkpoint", help="a log checkpoint seen before (an older package's, a witness's)")
    parser.add_argument("--consistency-proof", help="the portal's /log/consistency answer joining the two sizes")
    parser.add_argument("--tsa-certificate", help="the TSA's certificate (PEM) to check the log timestamp against")
    parser.add_argument("--witness", action="append", default=[], help="a witness's verifier key (repeatable)")
    parser.add_argument("--quorum", type=int, help="how many --witness must have cosigned the checkpoint (default 1)")
    parser.add_argument(
        "--require-post-quantum",
        action="store_true",
        help="require an ML-DSA-44 signature (beside Ed25519) on every record and on the log checkpoint",
    )
    return parser


def _read_text(path: str) -> str:
    with open(path, encoding="utf-8") as fh:
        return fh.read(MAX_ARGUMENT_FILE)


def _options(args: argparse.Namespace, parser: argparse.ArgumentParser) -> Options:
    if len(args.key_id) != len(args.key):
        parser.error("give --key-id and --key in pairs")
    secrets = dict(zip(args.key_id, args.key))
    for line in _read_text(args.key_file).splitlines() if args.key_file else []:
        if line.strip() and not line.lstrip().startswith("#"):
            key_id, sep, key = line.strip().partition("=")
            if not sep:
                parser.error(f"{args.key_file}: expected id=key lines")
            secrets[key_id.strip()] = key.strip()
    from .report import Options

    options = Options(secrets=secrets, origin=args.origin, require_post_quantum=args.require_post_quantum)
    if args.public_keys:
        options.pinned = json.loads(_read_text(args.public_keys))
    if args.earlier_checkpoint:
        proof = json.loads(_read_text(args.consistency_proof)) if args.consistency_proof else None
        options.earlier = (_read_text(args.earlier_checkpoint), proof)
    if args.witness or args.quorum is not None:
        _witnesses(args, parser, options)
    if args.tsa_certificate:
        from cryptography import x509

        with open(args.tsa_certificate, "rb") as fh:
            options.tsa = x509.load_pem_x509_certificate(fh.read())
    return options


def _witnesses(args: argparse.Namespace, parser: argparse.ArgumentParser, options: Options) -> None:
    from . import cosignature, witnessed

    if not args.witness:
        parser.error("--quorum counts witnesses: give each one's verifier key with --witness")
    try:
        options.witnesses = witnessed.witness_keys(args.witness)
        options.quorum = 1 if args.quorum is None else args.quorum
        witnessed.check_quorum(options.quorum, options.witnesses)
    except (cosignature.KeyFormatError, ValueError) as exc:
        parser.error(f"--witness/--quorum: {exc}")


def _verdict(report: Report, args: argparse.Namespace) -> int:
    print("\n".join(summary_lines(report)))
    if report.problems:
        print(f"FAIL ({len(report.problems)} problem(s))")
        print("\n".join(f"  {problem}" for problem in report.problems[:MAX_LINES]))
        if len(report.problems) > MAX_LINES:
            print(f"  ... and {len(report.problems) - MAX_LINES} more problem(s)")
        _print_findings(report)
        return FAIL
    if report.findings:
        print(f"FINDINGS ({len(report.findings)}): the portal's newest verification run found failures in this scope")
        _print_findings(report)
        return FINDINGS
    if not report.pinned and not args.trust_package_keys:
        print(
            "UNPINNED: every check passed, but only against the keys the package carries; verify with "
            "--public-keys signing-keys.json, or accept them with --trust-package-keys"
        )
        return UNPINNED
    print("PASS")
    return PASS


def _print_findings(report: Report) -> None:
    for run, finding in report.findings:
        about = finding.get("asset") or finding.get("name") or f"manifest {finding.get('manifest')}"
        print(f"  run {run}: {finding.get('kind')}: {about}: {finding.get('detail')}")


def summary_lines(report: Report) -> list[str]:
    from .report import LEFT_OUT

    index, c = report.index or {}, report.counts
    scope = given if isinstance(given := index.get("scope"), dict) else {}
    by = index.get("exported_by") or "unknown"
    lines = [f"scope: {scope.get('description', '?')}; exported {index.get('generated_at')} by {by}"] if index else []
    lines += [
        f"note: {n} HMAC signature(s) not checked: no key given for key id {k!r} "
        "(use --key-id ID --key KEY or --key-file)"
        for k, n in sorted(report.unsigned.items())
    ]
    if report.timestamp_unchecked:
        lines.append("note: the log checkpoint's RFC 3161 timestamp was not checked (give --tsa-certificate)")
    if report.witnessed:
        lines.append(report.witnessed)
    if report.timestamped_at:
        lines.append(f"timestamped: the log checkpoint existed by {report.timestamped_at.isoformat()} (RFC 3161)")
    if report.signers:
        lines.append(f"signed by: {', '.join(sorted(report.signers))}")
    for key_id, count in sorted(report.mldsa_signers.items()):
        lines.append(f"post-quantum: {count} of the signatures also signed with ML-DSA-44 by {key_id}")
    if not report.pinned:
        lines.append(
            "WARNING: no --public-keys given: every signature was checked with the keys.json the package "
            "carries, so trust rests on the package itself (a package re-signed with another key and "
            "carrying that key would pass). Pass the portal's /signing-keys.json, obtained separately, "
            "with --public-keys."
        )
    lines += [
        f"note: {c[kind]} {text}: their hashes are listed but not re-checked"
        for kind, text in LEFT_OUT.items()
        if c[kind]
    ]
    lines.append(
        f"checked: {c['manifests']} manifest(s), {c['assets']} asset(s) re-hashed, {c['signatures']} signature(s), "
        f"{c['log_proofs']} log inclusion proof(s), {c['boundaries']} range boundary record(s), "
        f"{c['earlier_checkpoints']} earlier log checkpoint(s), {c['timestamps']} timestamp(s)"
    )
    return lines


if __name__ == "__main__":
    sys.exit(main())
