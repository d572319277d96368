// Keyboard navigation: j/k move between messages, / focuses the search box.
// Keys typed into inputs, text areas and editable elements are left alone.
(function () {
  "use strict";

  function typing(target) {
    if (!target) return false;
    var tag = target.tagName;
    return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || target.isContentEditable;
  }

  function visibleEntries() {
    return Array.prototype.filter.call(document.querySelectorAll("li.entry"), function (el) {
      return el.offsetParent !== null; // skips entries inside closed <details>
    });
  }

  function move(step) {
    var entries = visibleEntries();
    if (!entries.length) return;
    var current = document.querySelector("li.entry.focused");
    var index = entries.indexOf(current);
    if (index === -1) {
      // Start from the first entry below the top of the window.
      index = entries.findIndex(function (el) { return el.getBoundingClientRect().top >= 0; });
      index = index === -1 ? 0 : index - (step > 0 ? 1 : 0);
    }
    var next = entries[Math.max(0, Math.min(entries.length - 1, index + step))];
    if (current) current.classList.remove("focused");
    next.classList.add("focused");
    next.focus({ preventScroll: true });
    next.scrollIntoView({ block: "center" });
  }

  document.addEventListener("keydown", function (event) {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
    if (typing(event.target)) return;
    if (event.key === "j") { move(1); event.preventDefault(); }
    else if (event.key === "k") { move(-1); event.preventDefault(); }
    else if (event.key === "/") {
      var box = document.getElementById("search-box") || document.getElementById("site-search");
      if (box) { box.focus(); box.select(); event.preventDefault(); }
    }
  });
})();
