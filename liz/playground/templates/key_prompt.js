(() => {
  "use strict";
  const STORAGE = "liz-api-key";
  const form = document.getElementById("key-form");
  const input = document.getElementById("api-key");
  const problem = document.getElementById("key-error");

  // Fetch this very page with the key; show it in place of the prompt when it is accepted.
  async function openWith(key) {
    problem.textContent = "";
    let response;
    try {
      response = await fetch(location.pathname + location.search, {
        headers: { Authorization: "Bearer " + key },
      });
    } catch (failure) {
      problem.textContent = "The server cannot be reached: " + failure.message;
      return;
    }
    if (!response.ok) {
      sessionStorage.removeItem(STORAGE);
      let reason = response.statusText;
      try {
        reason = (await response.json()).error || reason;
      } catch (notJson) {
        // keep the status text
      }
      problem.textContent = "That key was refused: " + reason;
      input.focus();
      return;
    }
    sessionStorage.setItem(STORAGE, key);
    const page = await response.text();
    document.open();
    document.write(page);
    document.close();
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const key = input.value.trim();
    if (key) openWith(key);
  });

  const saved = sessionStorage.getItem(STORAGE);
  if (saved) openWith(saved);
  else input.focus();
})();
