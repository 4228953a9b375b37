(function () {
  // Vanilla, served with the portal: the review page loads nothing from elsewhere (and runs no inline script).
  // The page shows one chunk of cards (audit/review/chunks.py); a key that moves past its first or last card
  // loads the next chunk at that page, as the index's links do without a script.
  var container = document.getElementById("pages");
  var FIRST = Number(container.dataset.first), LAST = Number(container.dataset.last);
  var COUNT = Number(container.dataset.pageCount), SIZE = Number(container.dataset.chunkSize);
  var dialog = document.getElementById("preview-dialog");
  var image = document.getElementById("preview-image");
  var title = document.getElementById("preview-title");
  var dialogFlag = document.getElementById("preview-flag");
  var current = 0;  // the page number the reader is on, 0 before any

  function card(number) { return document.getElementById("page-" + number); }
  function chunkOf(number) { return Math.floor((number - 1) / SIZE) * SIZE + 1; }
  function show(number) {
    if (number < 1 || number > COUNT) return;
    if (number < FIRST || number > LAST) {
      // Reopen the large view there if it was open: turning pages should not notice the chunk's edge.
      location.href = "?from=" + chunkOf(number) + (dialog.open ? "&large=1" : "") + "#page-" + number;
      return;
    }
    current = number;
    card(number).scrollIntoView({block: "start"});
    card(number).focus({preventScroll: true});
    if (dialog.open) enlarge(number);
  }
  function enlarge(number) {
    var button = card(number).querySelector(".preview-open");
    current = number;
    title.textContent = "Page " + number + " of " + COUNT + (button ? "" : ": no preview");
    image.hidden = !button;
    if (button) { image.src = button.dataset.large; image.alt = "Page " + number; }
    if (dialogFlag) {
      document.getElementById("preview-flag-page").value = number;
      dialogFlag.querySelector("input[type=submit]").value = "Raise flag on page " + number;
    }
    if (!dialog.open) dialog.showModal();
  }
  function flagHere(number) {
    // The flag control of the page the reader is on: in the large view if open, else on the page's card.
    if (dialog.open && dialogFlag) { document.getElementById("preview-flag-kind").focus(); return true; }
    var details = number && card(number) && card(number).querySelector(".flag-here");
    if (!details) return false;
    details.open = true;
    details.querySelector("select").focus();
    return true;
  }
  function arrived() {
    // Landing on #page-N (the index, a chunk link, a raised flag): the reader is on that page, keys go on from it.
    var match = /^#page-(\d+)$/.exec(location.hash), number = match && Number(match[1]);
    if (!number || !card(number)) return;
    current = number;
    if (!card(number).contains(document.activeElement)) card(number).focus({preventScroll: true});
  }
  function typing(target) {
    return /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName) || target.isContentEditable;
  }
  container.addEventListener("click", function (event) {
    var button = event.target.closest(".preview-open");
    if (button) enlarge(Number(button.dataset.page));
  });
  document.getElementById("preview-close").addEventListener("click", function () { dialog.close(); });
  dialog.addEventListener("close", function () { if (current && card(current)) card(current).focus(); });
  window.addEventListener("hashchange", arrived);
  // Previews appear as the worker makes them: live.js polls their progress, this puts each new one in its card
  // (the same button the page renders, so the keys and clicks above work on it at once).
  document.addEventListener("live:update", function (event) {
    (event.detail.previews || []).forEach(function (preview) {
      var target = card(preview.page);
      if (!target || target.querySelector(".preview-open")) return;
      var button = document.createElement("button");
      button.type = "button";
      button.className = "preview-open";
      button.dataset.page = preview.page;
      button.dataset.large = preview.large;
      button.setAttribute("aria-label", "Page " + preview.page + ": open the large view");
      var img = document.createElement("img");
      img.loading = "lazy";
      img.alt = "Page " + preview.page;
      img.src = preview.src;
      img.width = preview.width;
      img.height = preview.height;
      button.appendChild(img);
      target.querySelector(".page-preview").replaceChildren(button);
    });
  });
  // Suggestions (pages to look at first): s moves to the next open one, c confirms it, x dismisses it, each a
  // click on its own button, so the keys and the buttons send the same form.
  function nextSuggestion(from) {
    var open = Array.prototype.slice.call(document.querySelectorAll("#suggestions .suggestion.suggested"));
    if (!open.length) return false;
    var next = open[(open.indexOf(from) + 1) % open.length];
    next.scrollIntoView({block: "center"});
    next.focus({preventScroll: true});
    return true;
  }
  function answer(suggestion, decision) {
    var button = suggestion && suggestion.querySelector("button[value=" + decision + "]");
    if (button) button.click();
    return !!button;
  }
  var ANSWERS = {c: "confirm", x: "dismiss"};
  document.addEventListener("keydown", function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey || typing(event.target)) return;
    var suggestion = event.target.closest ? event.target.closest(".suggestion") : null;
    var done = event.key === "s" ? nextSuggestion(suggestion) : ANSWERS[event.key] && answer(suggestion, ANSWERS[event.key]);
    if (done) { event.preventDefault(); event.stopImmediatePropagation(); }
  });
  var STEPS = {j: 1, k: -1};
  // Arrows keep scrolling the document unless the reader is moving by page (a page or the large view has focus).
  var ARROWS = {ArrowDown: 1, ArrowUp: -1, ArrowRight: 1, ArrowLeft: -1};
  document.addEventListener("keydown", function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey || typing(event.target)) return;
    var focusedCard = event.target.closest ? event.target.closest(".review-page") : null;
    var focused = focusedCard ? Number(focusedCard.id.slice(5)) : 0;
    var step = STEPS[event.key] || ((dialog.open || focused) && ARROWS[event.key]);
    if (step) {
      event.preventDefault();
      var from = dialog.open || !focused ? current : focused;
      show(from ? from + step : (step > 0 ? FIRST : LAST));
    } else if (event.key === "f" && flagHere(dialog.open ? current : focused || current)) {
      event.preventDefault();
    } else if (event.key === "Enter" && !dialog.open && focused && event.target === focusedCard) {
      event.preventDefault();
      enlarge(focused);
    }
  });
  arrived();
  if (location.hash === "#next-suggestion") nextSuggestion(null);  // back from an answer: on to the next one
  if (/[?&]large=1(&|$)/.test(location.search) && current) enlarge(current);
})();
