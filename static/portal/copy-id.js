(function () {
  // A short correlation id shows 12 characters; a click copies the whole id (kept in its title).
  document.addEventListener("click", function (event) {
    var id = event.target.closest ? event.target.closest("code.short-id") : null;
    if (!id || !navigator.clipboard) return;
    navigator.clipboard.writeText(id.title).then(function () {
      id.dataset.copied = "copied";
      setTimeout(function () { delete id.dataset.copied; }, 1500);
    }, function () {});
  });
})();
