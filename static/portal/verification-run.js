(function () {
  // Poll the run's progress so a long run can be watched without reloading the page.
  const box = document.getElementById("run-progress");
  async function refresh() {
    const run = await (await fetch(box.dataset.url, {credentials: "same-origin"})).json();
    document.getElementById("run-progress-bar").value = run.percent;
    document.getElementById("run-progress-status").textContent = run.status;
    document.getElementById("run-progress-text").textContent = run.text;
    document.getElementById("run-progress-findings").textContent = run.findings;
    if (run.status === "queued" || run.status === "running") setTimeout(refresh, 1000);
  }
  refresh();
})();
