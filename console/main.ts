// The console's entry: sign-in with an API key (kept in this tab's sessionStorage only) and a hash router.
import { apiKey, client, signIn, signOut, unwrap } from "./api.ts";
import { attempt, clearMessages, field, h, notify } from "./dom.ts";
import { eventsPage, render, subscriptionPage, subscriptionsPage } from "./pages.ts";

function signInPage(): void {
  const key = h("input", { type: "password", required: true, autocomplete: "off", spellcheck: "false" });
  const form = h("form", { "aria-label": "Sign in" }, h("h1", {}, "Sign in"), field("API key", key, "whk_… — kept only in this browser tab."),
    h("button", { type: "submit" }, "Sign in"));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    void attempt(async () => {
      signIn(key.value.trim());
      try {
        await unwrap(client.GET("/v1/subscriptions", { params: { query: { limit: 1 } } }));
      } catch (err) {
        signOut();
        throw err;
      }
      notify("Signed in.");
      route();
    });
  });
  document.getElementById("nav")!.hidden = true;
  document.getElementById("main")!.replaceChildren(form);
  key.focus();
}

function route(): void {
  if (!apiKey()) return signInPage();
  document.getElementById("nav")!.hidden = false;
  const hash = location.hash || "#/subscriptions";
  const sub = /^#\/subscriptions\/(sub_[0-9A-Z]+)$/.exec(hash);
  if (sub) void render(subscriptionPage(sub[1]!));
  else if (hash === "#/events") void render(eventsPage);
  else void render(subscriptionsPage);
}

document.getElementById("sign-out")!.addEventListener("click", () => {
  signOut();
  location.hash = "";
  route();
});
window.addEventListener("hashchange", () => {
  clearMessages();
  route();
});
route();
