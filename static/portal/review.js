(function () {
  // Vanilla, served with the portal: the review page loads nothing from elsewhere (and runs no inline script).
  var pages = Array.prototype.slice.call(document.querySelectorAll(".review-page"));
  var dialog = document.getElementById("preview-dialog");
  var image = document.getElementById("preview-image");
  var title = document.getElementById("preview-title");
  var current = -1;

  function show(index) {
    if (index < 0 || index >= pages.length) return;
    current = index;
    pages[index].scrollIntoView({block: "start"});
    pages[index].focus({preventScroll: true});
    if (dialog.open) enlarge(index);
  }
  function enlarge(index) {
    var button = pages[index].querySelector(".preview-open");
    title.textContent = "Page " + (index + 1) + " of " + pages.length + (button ? "" : ": no preview");
    image.hidden = !button;
    if (button) { image.src = button.dataset.large; image.alt = "Page " + (index + 1); }
    if (!dialog.open) dialog.showModal();
  }
  function typing(target) {
    return /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName) || target.isContentEditable;
  }
  document.getElementById("pages").addEventListener("click", function (event) {
    var button = event.target.closest(".preview-open");
    if (button) { current = Number(button.dataset.page) - 1; enlarge(current); }
  });
  document.getElementById("preview-close").addEventListener("click", function () { dialog.close(); });
  dialog.addEventListener("close", function () { if (current >= 0) pages[current].focus(); });
  // Previews appear as the worker makes them: live.js polls their progress, this puts each new one in its card
  // (the same button the page renders, so the keys and clicks above work on it at once).
  document.addEventListener("live:update", function (event) {
    (event.detail.previews || []).forEach(function (preview) {
      var card = document.getElementById("page-" + preview.page);
      if (!card || card.querySelector(".preview-open")) return;
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
      card.querySelector(".page-preview").replaceChildren(button);
    });
  });
  var STEPS = {j: 1, k: -1};
  // Arrows keep scrolling the document unless the reader is moving by page (a page or the large view has focus).
  var ARROWS = {ArrowDown: 1, ArrowUp: -1, ArrowRight: 1, ArrowLeft: -1};
  document.addEventListener("keydown", function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey || typing(event.target)) return;
    var focused = pages.indexOf(event.target.closest ? event.target.closest(".review-page") : null);
    var step = STEPS[event.key] || ((dialog.open || focused >= 0) && ARROWS[event.key]);
    if (step) {
      event.preventDefault();
      show((dialog.open || focused < 0 ? current : focused) + step);
    } else if (event.key === "Enter" && !dialog.open && focused >= 0 && event.target === pages[focused]) {
      event.preventDefault();
      current = focused;
      enlarge(focused);
    }
  });
})();
