(function () {
  // Follow an upload until the intake worker has decided it, then show its job or why it was refused.
  const box = document.getElementById("submission");
  let waited = 0;
  async function refresh() {
    let outcome;
    try {
      outcome = await (await fetch(box.dataset.url, {credentials: "same-origin"})).json();
    } catch (error) {
      outcome = null;  // a lost poll (the server restarting): ask again below
    }
    if (outcome) {
      document.getElementById("submission-state").textContent = outcome.state;
      document.getElementById("submission-text").textContent = outcome.text;
      if (outcome.link) {
        const link = document.querySelector("#submission-link a");
        link.href = outcome.link;
        link.textContent = outcome.link_text;
        document.getElementById("submission-link").hidden = false;
      }
      if (outcome.state !== "pending") return;
    }
    // Every second at first, then less often: a submission waiting for a worker may wait a while.
    waited += 1;
    setTimeout(refresh, waited < 60 ? 1000 : 5000);
  }
  if (box.querySelector("#submission-state").textContent === "pending") setTimeout(refresh, 500);
})();
