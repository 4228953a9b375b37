"""The ledger: one Merkle log of signed records (manifests, retention events, case maps, activity), its checkpoints,
witnesses and timestamps, and the signatures they carry."""
