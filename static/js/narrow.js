// Narrow screens (app.css's 720px): the site header folds into a menu behind a button, and
// the list's filters and a transcript's details start folded so the sessions, or the
// conversation, come first. Without scripts the header wraps instead and both stay open.
const narrow = window.matchMedia("(max-width: 720px)");

function foldFilters(root) {
  for (const details of root.querySelectorAll("details.filters, details.session-meta")) details.open = !narrow.matches;
}

document.addEventListener("DOMContentLoaded", () => {
  foldFilters(document);
  narrow.addEventListener("change", () => foldFilters(document));
  document.body.addEventListener("htmx:afterSwap", (event) => foldFilters(event.detail.target));
  const header = document.querySelector("header.site");
  const button = header && header.querySelector(".menu-toggle");
  if (!button) return;
  header.classList.add("folds");
  button.hidden = false;
  button.addEventListener("click", () => {
    const open = button.getAttribute("aria-expanded") !== "true";
    button.setAttribute("aria-expanded", String(open));
    header.classList.toggle("open", open);
  });
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && header.classList.contains("open")) {
      button.click();
      button.focus();
    }
  });
});
