"""bench.load's figures from the database's instants: steps, percentiles, jobs per second, the report."""

from collections import Counter
from datetime import UTC, datetime, timedelta

from bench import load, report

T0 = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)


def row(kind, queued, extracting, writing, start=0.0):
    received = T0 + timedelta(seconds=start)
    claimed = received + timedelta(seconds=queued)
    extracted = claimed + timedelta(seconds=extracting)
    return {
        "kind": kind,
        "state": "accepted",
        "job": int(start * 1000) + 1,
        "host": "pagetrail-load-a",
        "manifest": True,
        "received": received,
        "decided": received + timedelta(seconds=queued / 2),
        "claimed": claimed,
        "extracted": extracted,
        "durable": extracted + timedelta(seconds=writing),
    }


def test_it_reports_each_step_apart_for_forms_and_bundles():
    rows = [row("form", q, 0.01, 0.05, start=i) for i, q in enumerate(range(1, 21))] + [row("bundle", 3.0, 2.0, 1.0)]

    table = {(kind, step): figures for kind, step, *figures in load.latency_rows(rows)}

    assert table["form", "queue wait"] == [20, "10.000", "19.000", "20.000"]
    assert table["form", "of which intake"][1:3] == ["5.000", "9.500"]
    assert table["bundle", "extraction"] == [1, "2.000", "2.000", "2.000"]
    assert table["bundle", "manifest durability"] == [1, "1.000", "1.000", "1.000"]


def test_it_leaves_out_a_step_whose_end_never_came():
    unfinished = {**row("form", 1.0, 1.0, 1.0), "extracted": None, "durable": None}

    table = {(kind, step): figures for kind, step, *figures in load.latency_rows([unfinished])}

    assert table["form", "queue wait"][0] == 1 and table["form", "extraction"] == [0, "–", "–", "–"]


def test_it_counts_jobs_per_second_from_first_received_to_last_durable():
    rows = [row("form", 1.0, 1.0, 1.0, start=s) for s in (0.0, 1.0, 2.0, 7.0)]  # the last durable at 10 s

    assert load.jobs_per_second(rows) == 0.4
    assert load.jobs_per_second([{**rows[0], "durable": None}]) is None


def test_it_prints_the_table_and_every_failed_check(capsys):
    result = {
        "options": {"pages": 240, "clients": 8, "workers": 1, "web_workers": 2, "intake_workers": 1},
        "files": Counter(form=2, bundle=1),
        "namespaces": True,
        "load": [1.0, 2.0],
        "sent_seconds": 1.5,
        "rows": [row("form", 1.0, 0.1, 0.1), row("form", 2.0, 0.1, 0.1, start=1), row("bundle", 1.0, 2.0, 1.0)],
        "cpu": Counter(jobs=0.3, intake=0.06, web=0.03),
        "stalled": False,
        "failures": ["form-0001.pdf: job 2 has no manifest"],
    }

    load.print_report(result)

    out = capsys.readouterr().out
    assert "| form | queue wait | 2 | 1.000 | 2.000 | 2.000 |" in out
    assert "jobs 0.3 s (100.0 ms a job)" in out and "intake 0.1 s (20.0 ms a file)" in out
    assert "FAILED form-0001.pdf: job 2 has no manifest" in out and "all passed" not in out


def test_it_spreads_the_bundles_among_the_forms(tmp_path, monkeypatch):
    forms = [tmp_path / f"form-{i}.pdf" for i in range(6)]
    monkeypatch.setattr(load.per_job, "make_forms", lambda out, count, seed: forms[:count])
    for index in range(2):
        (tmp_path / "load-bundles-3p").mkdir(exist_ok=True)
        (tmp_path / "load-bundles-3p" / f"bundle-{index:02d}.pdf").write_bytes(b"%PDF-")  # made once: kept

    kinds = [kind for kind, _ in load.make_files(tmp_path, 6, 2, 3)]

    assert kinds == ["form", "form", "bundle", "form", "form", "bundle", "form", "form"]


def test_it_puts_jobs_per_second_and_the_forms_p95_in_the_benchmarks_summary():
    rows = [row("form", q, 0.5, 0.25, start=i) for i, q in enumerate((1.0, 2.0, 3.0))]
    result = {
        "files": Counter(form=3),
        "rows": rows,
        "failures": [],
        "cpu": {"jobs": 0.09, "intake": 0.03, "web": 0.03},
    }

    summary = load.summary(result)
    line = report._load_row(summary)

    assert summary["p95"]["form queue wait"] == "3.000" and summary["jobs_per_second"] == 3 / 5.75
    assert line[1] == "0.52 jobs/s; forms' p95: queue wait 3.000 s, extraction 0.500 s, manifest durability 0.250 s"


def test_the_capacity_models_worker_core_is_filled_from_the_same_runs_per_job_and_web_figures():
    rows = [row("form", 1.0, 0.5, 0.25, start=i) for i in range(3)]
    load_summary = load.summary(
        {"files": Counter(form=3), "rows": rows, "failures": [], "cpu": {"jobs": 0.09, "intake": 0.03, "web": 0.03}}
    )
    per_job = {"median": {"cluster_cpu_ms": 30.0, "intake_cpu_ms": 10.0}}

    line = report._capacity_row(per_job, load_summary)
    alone = report._capacity_row(per_job, None)

    assert load_summary["cpu_ms"] == {"jobs": 30.0, "intake": 10.0, "web": 10.0}
    assert line[1] == "20.0 jobs/s a core (50.0 ms a job)" and line[3] == "17.5 worker cores at 350 jobs/s"
    assert alone[1] == "25.0 jobs/s a core (40.0 ms a job)" and "not measured" in alone[2]
    assert report._capacity_row(None, load_summary)[1].startswith("not run")
