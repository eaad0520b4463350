// Copy buttons: <button class="copy" data-copy="...">. Plain script (no framework), loaded from 'self'
// as the Content-Security-Policy asks. The Clipboard API needs a secure context (https, or
// 127.0.0.1/localhost); elsewhere the text is copied from a selected, off-screen text field.
(function () {
  "use strict";

  function fallback(text) {
    var field = document.createElement("textarea");
    field.value = text;
    field.setAttribute("readonly", "");
    field.style.position = "fixed";
    field.style.left = "-9999px";
    document.body.appendChild(field);
    field.select();
    var ok = false;
    try {
      ok = document.execCommand("copy");
    } catch (e) {
      ok = false;
    }
    document.body.removeChild(field);
    return ok ? Promise.resolve() : Promise.reject(new Error("copy refused"));
  }

  function copy(text) {
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(text).catch(function () {
        return fallback(text);
      });
    }
    return fallback(text);
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest("button.copy");
    if (!button) {
      return;
    }
    copy(button.getAttribute("data-copy")).then(
      function () {
        button.textContent = "copied";
      },
      function () {
        button.textContent = "select and copy";
      });
  });
})();

// A page that follows something running (a replay job's progress) carries
// <span id="refresh" data-refresh="SECONDS">: it reloads itself every SECONDS while it is there.
// Once one of its forms is submitted (Pause, Cancel) it no longer reloads: a reload due while the
// form's request is on its way would abort it, and the operator's click would be lost.
(function () {
  "use strict";
  var marker = document.getElementById("refresh");
  if (!marker) {
    return;
  }
  var seconds = parseInt(marker.getAttribute("data-refresh"), 10);
  if (seconds > 0) {
    var timer = window.setTimeout(function () {
      window.location.reload();
    }, seconds * 1000);
    document.addEventListener("submit", function () {
      window.clearTimeout(timer);
    }, true);
  }
})();
