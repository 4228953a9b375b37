"""What the benchmark's runs must get right, whatever their speed: checked against corpus.json."""


def failures(runs: list, truth: dict) -> list[str]:
    """Sentences naming each wrong count, changed JPEG or output that differs between runs."""
    files = {f["name"]: f for f in truth["files"]}
    found = _floor(runs[0], files)
    ours = [run for run in runs if run.name.startswith("Pagetrail") and not run.skipped]
    for run in ours:
        for name, digests in run.digests.items():
            found += _pagetrail(run.name, name, digests, run.placements[name], files[name])
    for run in ours[1:]:
        if {n: sorted(d) for n, d in run.digests.items()} != {n: sorted(d) for n, d in ours[0].digests.items()}:
            found.append(f"{run.name}: outputs differ from those of {ours[0].name}")
    return found


def _floor(run, files: dict) -> list[str]:
    return [
        f"{run.name}: {name} has {len(digests)} image streams, corpus.json says {expected}"
        for name, digests in run.digests.items()
        if len(digests) != (expected := files[name]["image_xobjects"] + files[name]["smask_xobjects"])
    ]


def _pagetrail(run: str, name: str, digests: list[str], placements: int, truth: dict) -> list[str]:
    found = []
    if len(digests) != truth["distinct_outputs"]:
        found.append(f"{run}: {name} gave {len(digests)} files, corpus.json says {truth['distinct_outputs']}")
    if placements != truth["placements"]:
        found.append(f"{run}: {name} reported {placements} placements, corpus.json says {truth['placements']}")
    if missing := set(truth["jpeg_sha256"]) - set(digests):
        found.append(f"{run}: {name} changed {len(missing)} JPEG(s) instead of passing them through")
    return found
