// Keys, copy buttons and search-hit marks. Each is an extra: the pages work without this file.
// Keys typed into inputs, text areas and editable elements are left alone.
(function () {
  "use strict";

  var KEYS = [
    ["j", "next message"],
    ["k", "previous message"],
    ["o or Enter", "open or close the first folded part of the message"],
    ["c", "next compaction"],
    ["C", "previous compaction"],
    ["G", "the end of the session"],
    ["n", "next search hit"],
    ["N", "previous search hit"],
    ["s", "next possible secret"],
    ["S", "previous possible secret"],
    ["/", "search"],
    ["?", "show these keys"],
  ];

  function typing(target) {
    if (!target) return false;
    var tag = target.tagName;
    return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || target.isContentEditable;
  }

  // --- Moving through a transcript ----------------------------------------------------------------

  // Messages a reader can see: rows inside a closed subagent have no layout box.
  function stops() {
    return Array.prototype.filter.call(document.querySelectorAll("li.entry"), function (el) {
      return el.offsetParent !== null;
    });
  }

  function current() {
    return document.querySelector("li.focused");
  }

  function focusOn(el) {
    var before = current();
    if (before) before.classList.remove("focused");
    el.classList.add("focused");
    el.focus({ preventScroll: true });
    el.scrollIntoView({ block: "nearest" });
    if (el.getBoundingClientRect().top < 0 || el.getBoundingClientRect().top > window.innerHeight / 2) {
      el.scrollIntoView({ block: "start" });
    }
  }

  function move(step) {
    var all = stops();
    if (!all.length) return;
    var index = all.indexOf(current());
    if (index === -1) {
      // Start from the first one whose top is in the window.
      index = all.findIndex(function (el) { return el.getBoundingClientRect().top >= 0; });
      index = index === -1 ? all.length - 1 : index - (step > 0 ? 1 : 0);
    }
    focusOn(all[Math.max(0, Math.min(all.length - 1, index + step))]);
  }

  function toggle() {
    var el = current();
    if (!el) return false;
    var fold = el.querySelector("details");
    if (!fold) return false;
    fold.open = !fold.open;
    return true;
  }

  // The item the reader is at: the focused message, else the first whose top is in the window.
  function currentItem() {
    var el = current() || stops().find(function (row) { return row.getBoundingClientRect().top >= 0; });
    return el ? parseInt(el.getAttribute("data-item"), 10) : -1;
  }

  // The next (step 1) or previous (-1) compaction: in place if the page holds it, else its page.
  function jumpToCompaction(step) {
    var links = Array.prototype.slice.call(document.querySelectorAll("#jumps a[data-compaction]"));
    var at = currentItem();
    if (step < 0) links.reverse();
    var link = links.find(function (a) {
      var item = parseInt(a.getAttribute("data-item"), 10);
      return step > 0 ? item > at : item < at;
    });
    if (!link) return false;
    var mark = document.getElementById("compaction-" + link.getAttribute("data-compaction"));
    if (mark) focusOn(mark.closest("li.entry"));
    else link.click();
    return true;
  }

  // The next (step 1) or previous (-1) possible secret of the header's list, in list order (a
  // tool's output shows in its call's row, so lines do not order the rows): its row in place if
  // the page holds it, else the page that does.
  function jumpToFinding(step) {
    var list = document.getElementById("findings");
    if (!list) return false;
    var links = list.querySelectorAll("a[data-line]");
    var at = parseInt(list.getAttribute("data-at") || (step > 0 ? "-1" : String(links.length)), 10) + step;
    if (at < 0 || at >= links.length) return false;
    list.setAttribute("data-at", String(at));
    var mark = document.getElementById(links[at].hash.slice(1));
    var row = mark && mark.closest("li.entry");
    if (row && row.offsetParent !== null) {
      focusOn(row);
      showSecret(row, links[at].closest("li").getAttribute("data-fingerprint"));
    } else links[at].click();
    return true;
  }

  // The finding's mark in its row (else the row's first): opened if folded, brought into view.
  function showSecret(row, fp) {
    var marks = Array.prototype.slice.call(row.querySelectorAll("mark.secret"));
    var mark = marks.find(function (m) { return m.getAttribute("data-fingerprint") === fp; }) || marks[0];
    document.querySelectorAll("mark.secret.current").forEach(function (m) { m.classList.remove("current"); });
    if (!mark) return;
    for (var fold = mark.closest("details"); fold; fold = fold.parentElement.closest("details")) fold.open = true;
    mark.classList.add("current");
    mark.scrollIntoView({ block: "center" });
  }

  // A revealed value replaces every mask of its fingerprint, in the header's list and in the
  // transcript, as text (never as HTML); the other reveal buttons of that fingerprint go.
  document.addEventListener("htmx:afterRequest", function (event) {
    var button = event.detail.elt;
    if (!button.classList || !button.classList.contains("reveal") || !event.detail.successful) return;
    var found = JSON.parse(event.detail.xhr.responseText);
    var fp = found.fingerprint;
    document.querySelectorAll("#findings li[data-fingerprint]").forEach(function (item) {
      if (item.getAttribute("data-fingerprint") !== fp) return;
      var masked = item.querySelector("code.masked");
      if (masked) { masked.textContent = found.value; masked.classList.add("revealed"); }
    });
    document.querySelectorAll("mark.secret").forEach(function (mark) {
      if (mark.getAttribute("data-fingerprint") !== fp) return;
      mark.textContent = found.value;
      mark.classList.add("revealed");
      mark.title = "Possible secret, revealed";
    });
    document.querySelectorAll("button.reveal").forEach(function (other) {
      if (other.getAttribute("data-fingerprint") === fp) other.remove();
    });
  });

  // A dismissal (or its undo) applies to the fingerprint everywhere: the page is drawn again.
  document.addEventListener("htmx:afterRequest", function (event) {
    var button = event.detail.elt;
    if (button.classList && button.classList.contains("dismiss") && event.detail.successful) window.location.reload();
  });

  // The end: in place when the page has loaded it, else the page that ends the session.
  function jumpToEnd() {
    var rows = stops();
    if (rows.length && !document.getElementById("entry-chunk")) {
      focusOn(rows[rows.length - 1]);
      return true;
    }
    return clickLink("#jumps .jump-end");
  }

  // --- The keys dialog ----------------------------------------------------------------------------

  function keysDialog() {
    var dialog = document.getElementById("keys-dialog");
    if (dialog) return dialog;
    dialog = document.createElement("dialog");
    dialog.id = "keys-dialog";
    dialog.setAttribute("aria-labelledby", "keys-dialog-title");
    var title = document.createElement("h2");
    title.id = "keys-dialog-title";
    title.textContent = "Keys";
    var list = document.createElement("dl");
    KEYS.forEach(function (pair) {
      var term = document.createElement("dt");
      pair[0].split(" or ").forEach(function (key, n) {
        if (n) term.appendChild(document.createTextNode(" or "));
        var kbd = document.createElement("kbd");
        kbd.textContent = key;
        term.appendChild(kbd);
      });
      var what = document.createElement("dd");
      what.textContent = pair[1];
      list.appendChild(term);
      list.appendChild(what);
    });
    var close = document.createElement("button");
    close.type = "button";
    close.textContent = "Close";
    close.addEventListener("click", function () { dialog.close(); });
    dialog.appendChild(title);
    dialog.appendChild(list);
    dialog.appendChild(close);
    document.body.appendChild(dialog);
    return dialog;
  }

  function clickLink(selector) {
    var link = document.querySelector(selector);
    if (link) link.click();
    return !!link;
  }

  document.addEventListener("keydown", function (event) {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
    if (typing(event.target)) return;
    var key = event.key;
    var handled = true;
    if (key === "j") move(1);
    else if (key === "k") move(-1);
    else if (key === "o") handled = toggle();
    else if (key === "Enter" && current() && event.target === current()) handled = toggle();
    else if (key === "n") handled = clickLink("#hit-bar .hit-next");
    else if (key === "N") handled = clickLink("#hit-bar .hit-previous");
    else if (key === "s") handled = jumpToFinding(1);
    else if (key === "S") handled = jumpToFinding(-1);
    else if (key === "c") handled = jumpToCompaction(1);
    else if (key === "C") handled = jumpToCompaction(-1);
    else if (key === "G") handled = jumpToEnd();
    else if (key === "?") {
      var dialog = keysDialog();
      if (dialog.open) dialog.close(); else dialog.showModal();
    } else if (key === "/") {
      var box = document.getElementById("search-box") || document.getElementById("site-search");
      if (box) { box.focus(); box.select(); } else handled = false;
    } else handled = false;
    if (handled) event.preventDefault();
  });

  // --- Copy buttons -------------------------------------------------------------------------------

  function copyText(text, button) {
    function done() {
      var label = button.textContent;
      button.textContent = "Copied";
      setTimeout(function () { button.textContent = label; }, 1500);
    }
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done);
      return;
    }
    // Plain http on a network: the clipboard API is refused there, a selection is not.
    var area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.className = "copy-buffer";
    document.body.appendChild(area);
    area.select();
    try { document.execCommand("copy"); done(); } finally { area.remove(); }
  }

  function copyButton(label, text) {
    var button = document.createElement("button");
    button.type = "button";
    button.className = "copy";
    button.textContent = "Copy";
    button.setAttribute("aria-label", label);
    button.addEventListener("click", function (event) {
      event.stopPropagation();
      copyText(text(), button);
    });
    return button;
  }

  // An element's text without the reveal buttons in it (a mark's "reveal" is not its text).
  function withoutButtons(el) {
    var copy = el.cloneNode(true);
    copy.querySelectorAll("button.reveal").forEach(function (button) { button.remove(); });
    return copy.textContent;
  }

  function messageText(entry) {
    var copy = entry.cloneNode(true);
    copy.querySelectorAll(".entry-head, button.copy, button.reveal, .branches, .line-anchor").forEach(function (el) { el.remove(); });
    return copy.textContent.replace(/\n{3,}/g, "\n\n").trim();
  }

  function addCopyButtons(root) {
    root.querySelectorAll("li.entry > .entry-head").forEach(function (head) {
      if (head.querySelector("button.copy")) return;
      var entry = head.parentElement;
      // The line link and the button in one box at the right: when the head wraps (a reply's
      // model, tokens and time on a phone), they wrap together, never the button alone.
      var end = document.createElement("span");
      end.className = "head-end";
      var link = head.querySelector(".permalink");
      if (link) { head.insertBefore(end, link); end.appendChild(link); } else { head.appendChild(end); }
      end.appendChild(copyButton("Copy this message", function () { return messageText(entry); }));
    });
    root.querySelectorAll("li.entry pre, li.entry .command-line code").forEach(function (block) {
      var holder = block.parentElement;
      if (!holder || holder.classList.contains("copyable")) return;
      var wrap = document.createElement("div");
      wrap.className = "copyable";
      holder.insertBefore(wrap, block);
      wrap.appendChild(block);
      wrap.appendChild(copyButton("Copy this block", function () { return withoutButtons(block); }));
    });
  }

  // --- Search hits --------------------------------------------------------------------------------

  var hitPattern = null;

  function escapeRegExp(text) {
    return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  }

  function hitTerms() {
    var data = document.getElementById("hit-terms");
    if (!data) return null;
    var terms = JSON.parse(data.textContent).map(function (term) {
      return escapeRegExp(term.replace(/\*$/, ""));
    }).filter(Boolean);
    if (!terms.length) return null;
    terms.sort(function (a, b) { return b.length - a.length; });
    // A term starts a word, as the index's prefix search does.
    return new RegExp("(?<![\\p{L}\\p{N}])(?:" + terms.join("|") + ")", "giu");
  }

  function markHits(root) {
    if (!hitPattern) return;
    var walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
      acceptNode: function (node) {
        var parent = node.parentElement;
        if (!parent || parent.closest(".entry-head, mark, button, script, textarea")) return NodeFilter.FILTER_REJECT;
        return parent.closest("li.entry") ? NodeFilter.FILTER_ACCEPT : NodeFilter.FILTER_REJECT;
      },
    });
    var nodes = [];
    while (walker.nextNode()) nodes.push(walker.currentNode);
    nodes.forEach(function (node) {
      var text = node.nodeValue;
      hitPattern.lastIndex = 0;
      if (!hitPattern.test(text)) return;
      hitPattern.lastIndex = 0;
      var fragment = document.createDocumentFragment();
      var last = 0;
      text.replace(hitPattern, function (match, offset) {
        fragment.appendChild(document.createTextNode(text.slice(last, offset)));
        var mark = document.createElement("mark");
        mark.className = "hit";
        mark.textContent = match;
        fragment.appendChild(mark);
        last = offset + match.length;
        return match;
      });
      fragment.appendChild(document.createTextNode(text.slice(last)));
      node.parentNode.replaceChild(fragment, node);
    });
    // A hit inside a folded part of the message the page opened at: unfold it.
    var target = location.hash && document.getElementById(location.hash.slice(1));
    if (target) {
      var row = target.closest("li.entry");
      if (row) row.querySelectorAll("details").forEach(function (d) { if (d.querySelector("mark.hit")) d.open = true; });
    }
  }

  // A block that scrolls (a long output held to a height) takes the keyboard's focus, so that
  // it can be scrolled without a mouse; one that fits is no extra tab stop.
  function focusableScrolling(root) {
    root.querySelectorAll("pre").forEach(function (pre) {
      var scrolls = pre.scrollHeight > pre.clientHeight + 1 || pre.scrollWidth > pre.clientWidth + 1;
      if (scrolls && !pre.hasAttribute("tabindex")) {
        pre.tabIndex = 0;
        pre.setAttribute("aria-label", "Scrollable block");
      }
    });
  }

  function enhance(root) {
    addCopyButtons(root);
    markHits(root);
    focusableScrolling(root);
  }

  // The editor opened at a line (a finding's): select that line in the text and bring it into view.
  function selectLine(area) {
    var line = parseInt(area.getAttribute("data-line"), 10);
    var lines = area.value.split("\n");
    if (!(line >= 1 && line <= lines.length)) return;
    var start = lines.slice(0, line - 1).join("\n").length + (line > 1 ? 1 : 0);
    area.focus();
    area.setSelectionRange(start, start + lines[line - 1].length);
    var height = parseFloat(getComputedStyle(area).lineHeight) || 18;
    area.scrollTop = Math.max(0, (line - 3) * height);
  }

  function start() {
    var area = document.querySelector("textarea[data-line]");
    if (area) selectLine(area);
    hitPattern = hitTerms();
    var list = document.getElementById("entry-list");
    if (list) enhance(list);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
  // Chunks, folds and live updates that htmx brings in get the same.
  document.addEventListener("toggle", function (event) {
    if (event.target.open && event.target.closest("#entry-list")) focusableScrolling(event.target);
  }, true);
  document.addEventListener("htmx:load", function (event) {
    var el = event.detail && event.detail.elt;
    if (el && el.nodeType === 1 && el.closest("#entry-list")) enhance(el);
  });
})();
