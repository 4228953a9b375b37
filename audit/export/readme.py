"""The README.txt of an evidence package: what is inside, and how an auditor verifies it offline."""

README = """Pagetrail evidence package
==========================

Scope: {scope}
Exported {at} by {by}.
{findings}
What is inside
- manifests/<sequence>-<sha256>.json: each manifest exactly as hashed and signed (canonical JSON).
- index.json: the exporter's signed statement (signature in index.sig.json, Ed25519, over the exact bytes
  of index.json): the scope; each manifest's sequence, sha256, key id, signature; the log section (a C2SP
  checkpoint note signed with the evidence key, its RFC 3161 token if any, the cosignatures its witnesses
  had given it (C2SP tlog-cosignature lines, and each witness's name and key id), the leaf index and inclusion
  proof of each manifest, retention event and case map, and for a date range the boundary records just
  outside it: records/ holds those that are retention events); for a date range, the case maps made in it
  (cases/); the latest verification runs and their findings for this scope; the retention events, each
  with its signed statement naming every file it deleted; every asset the manifests list, with its file
  or the reason it is absent; the sha256 of keys.json.
- assets/<name>: the extracted images, if the package was exported with assets. Files deleted under a
  retention policy are left out; a signed retention event in index.json names each of them.
- keys.json: the portal's Ed25519 and ML-DSA-44 public keys (current and retired, with their validity
  periods). Each record, the index and the checkpoint are signed with both where the portal had both keys.
- verify_evidence.pyz: the offline verifier (Python 3.9+, no network). It needs only the `cryptography`
  package, for Ed25519 (pip install cryptography): a widely reviewed implementation, not one of our own.

How to verify
    python3 verify_evidence.pyz THIS_PACKAGE.zip --public-keys signing-keys.json
        signing-keys.json: the list the portal publishes at /signing-keys.json, obtained separately (not
        from whoever handed you this package). Every key in keys.json must be in it.
    python3 verify_evidence.pyz THIS_PACKAGE.zip --trust-package-keys
        without a list of your own: trust then rests on the keys the package carries, and a package
        re-signed with another key that carries that key would pass. Without either option the verifier
        checks everything, warns, and exits 3 (UNPINNED) instead of printing PASS.
    ... --key-id KEY_ID --key KEY   or   --key-file keys.txt (id=key lines)
        HMAC keys, for manifests signed before Ed25519.
    ... --witness VKEY [--witness VKEY ...] --quorum K
        the checkpoint must be cosigned by K of these witnesses, each VKEY (name+key id+base64 key) obtained
        from that witness, never from this package. Without --witness its cosignatures are listed, unchecked.
    ... --require-post-quantum
        every record, the index and the log checkpoint must also carry a verifying ML-DSA-44 signature
        (evidence that stays checkable once Ed25519 no longer holds); one signed with Ed25519 alone fails.

    python3 -m zipfile -l verify_evidence.pyz
        what the verifier is: the very modules (audit/verifier/) the portal's verification runs import.

It re-hashes every manifest and included asset; follows each manifest's, retention event's and case map's
inclusion proof to the signed log checkpoint (a record the ledger does not hold counts for nothing); for a
date range, checks that its records are contiguous leaves and that the boundary records just outside it
were made outside it; checks every signature, each dated inside its key's
validity period; accepts an absent asset or manifest file only when a signed retention event names it (or
assets were not requested, or it lies outside the case); names the keys that signed. It prints PASS, or
FAIL and one line per problem. Exit status: 0 PASS, 1 FAIL, 3 UNPINNED, 4 FINDINGS (the package is
intact but the portal's newest verification run recorded failures for this scope: they are listed).
"""
