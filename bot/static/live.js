// The run page's live output (bot/run_page.py): new lines of a running run, as Server-Sent Events.
// Each event carries a line the server already rendered (core.ansi_html); it is parsed inert and only its
// text and the renderer's own span classes are copied in. A line already shown is skipped, so a reconnect
// (EventSource resumes with Last-Event-ID) never shows one twice. When the run ends, the page reloads once
// to show its final plan and gate.
"use strict";
(function () {
  var out = document.getElementById("output");
  var live = document.getElementById("live");
  if (!out || out.dataset.running !== "true" || !window.EventSource) return;
  var seen = new Set();
  out.querySelectorAll("span.line").forEach(function (l) { seen.add(l.dataset.id); });
  var CLASS = /^a-(b|d|i|u|f1?[0-9]|g1?[0-9])$/;

  function line(id, html) {
    var parsed = document.createElement("template");
    parsed.innerHTML = html; // a template's content is inert: no script runs, no image loads
    var span = document.createElement("span");
    span.className = "line";
    span.dataset.id = id;
    parsed.content.childNodes.forEach(function (node) {
      var piece = document.createElement("span");
      piece.textContent = node.textContent;
      if (node.nodeType === Node.ELEMENT_NODE) {
        piece.className = Array.prototype.filter.call(node.classList, function (c) { return CLASS.test(c); }).join(" ");
      }
      span.appendChild(piece);
    });
    return span;
  }

  var source = new EventSource(out.dataset.events + "?after=" + encodeURIComponent(out.dataset.after));
  source.addEventListener("open", function () { live.textContent = "Live: new lines appear as the run writes them."; });
  source.addEventListener("error", function () { live.textContent = "Live: reconnecting…"; });
  source.addEventListener("line", function (event) {
    var data = JSON.parse(event.data);
    if (seen.has(data.id)) return;
    seen.add(data.id);
    out.appendChild(line(data.id, data.html));
    out.appendChild(document.createTextNode("\n"));
  });
  source.addEventListener("end", function () {
    source.close();
    live.textContent = "The run ended: loading its final state.";
    window.location.reload();
  });
})();
