// Cairn console: small progressive touches; every page works without it.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  // The line a link pointed at stays marked after the page scrolls to it.
  const target = location.hash && document.getElementById(location.hash.slice(1));
  if (target && target.tagName === "TR") {
    target.classList.add("here");
  }
  // Deleting a memory asks first.
  for (const button of document.querySelectorAll("button.danger")) {
    button.addEventListener("click", (event) => {
      if (!window.confirm("Delete this memory? Pointers to it will stop resolving.")) {
        event.preventDefault();
      }
    });
  }
});
