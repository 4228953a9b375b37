(function () {
  // The one live-update script of every page whose object moves on the server (an upload, a job, a
  // verification run, the review page's previews): plain polling of a small JSON endpoint, so a page never
  // contradicts itself. The element with data-live-url names the endpoint; every element marked
  // data-live="name" shows text[name], every element marked data-live-html="name" is replaced by html[name]
  // (fragments the server rendered and escaped). Polling stops once the endpoint says the object is final.
  // No inline script and no eval: the Content-Security-Policy allows neither.
  var root = document.querySelector("[data-live-url]");
  if (!root) return;
  var every = Number(root.dataset.liveEvery || 1000);
  var PATIENT_POLLS = 60;  // then less often: a job waiting for a worker or a provider may wait a long while
  var polls = 0;
  var title = document.title;
  var shown = {};  // the fragments last written: the browser rewrites innerHTML, so compare with what came

  function each(selector, fn) {
    Array.prototype.forEach.call(document.querySelectorAll(selector), fn);
  }
  function apply(state) {
    var text = state.text || {}, html = state.html || {};
    each("[data-live]", function (el) {
      var value = text[el.dataset.live];
      if (value === undefined) return;
      if (el.tagName === "PROGRESS") el.value = Number(value); else el.textContent = value;
    });
    each("[data-live-html]", function (el) {
      var name = el.dataset.liveHtml, value = html[name];
      if (value === undefined || shown[name] === value) return;  // unchanged: a link being clicked stays put
      el.innerHTML = value;
    });
    Object.keys(html).forEach(function (name) { shown[name] = html[name]; });
    if (text.title !== undefined && root.dataset.liveTitle) {
      document.title = title.replace(root.dataset.liveTitle, text.title);
    }
    root.dataset.liveState = state.final ? "final" : "live";
    document.dispatchEvent(new CustomEvent("live:update", {detail: state}));
  }
  function later(delay) {
    polls += 1;
    setTimeout(refresh, polls < PATIENT_POLLS ? delay : delay * 5);
  }
  function refresh() {
    fetch(root.dataset.liveUrl, {credentials: "same-origin", headers: {Accept: "application/json"}})
      .then(function (response) {
        if (!response.ok) throw new Error("HTTP " + response.status);
        return response.json();
      })
      .then(function (state) {
        apply(state);
        if (!state.final) later(every);
      })
      .catch(function () { later(every * 5); });  // a restart or a blip: keep trying, slower
  }
  if (root.dataset.liveState !== "final") refresh();
})();
