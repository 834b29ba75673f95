// tide dashboard: refresh the page's main part every data-refresh seconds,
// only while the tab is visible; keeps the scroll position. No dependencies.
(function () {
  "use strict";
  var every = parseInt(document.body.getAttribute("data-refresh") || "0", 10);
  if (!every) { return; }
  function refresh() {
    if (document.hidden) { return; }
    fetch(window.location.href, {credentials: "same-origin", headers: {"X-Tide-Live": "1"}})
      .then(function (r) {
        if (r.redirected || !r.ok) { window.location.reload(); return null; }
        return r.text();
      })
      .then(function (html) {
        if (!html) { return; }
        var doc = new DOMParser().parseFromString(html, "text/html");
        var fresh = doc.getElementById("main");
        var here = document.getElementById("main");
        if (fresh && here) {
          here.replaceWith(fresh);
          document.body.setAttribute("data-refreshed", String(Date.now()));
        }
      })
      .catch(function () { /* the server is restarting: try again next time */ });
  }
  window.setInterval(refresh, every * 1000);
}());
