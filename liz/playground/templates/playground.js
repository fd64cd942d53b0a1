(() => {
  "use strict";
  // Everything shown comes from the API; text is always set as text, never as HTML.
  const STORAGE = "liz-api-key";
  const USER_STORAGE = "liz-playground-user";
  const key = sessionStorage.getItem(STORAGE);
  const $ = (id) => document.getElementById(id);
  const agentSelect = $("agent");
  const userInput = $("user");
  const messages = $("messages");
  const composer = $("composer");
  const messageBox = $("message");
  const sendButton = $("send");
  let selectedTurn = null;
  let factsTimers = [];
  let learningTimer = null;

  function el(tag, attributes, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes || {})) {
      if (name === "text") node.textContent = value;
      else if (name === "className") node.className = value;
      else node.setAttribute(name, value);
    }
    for (const child of children) if (child) node.append(child);
    return node;
  }

  function say(text, isError) {
    $("status").textContent = text;
    $("status").classList.toggle("error", Boolean(isError));
  }

  async function api(path, options) {
    const init = Object.assign({}, options || {});
    const headers = new Headers(init.headers || {});
    if (key) headers.set("Authorization", "Bearer " + key);
    init.headers = headers;
    const response = await fetch(path, init);
    if (response.status === 401 && key) {
      // The key changed or was withdrawn: ask for it again.
      sessionStorage.removeItem(STORAGE);
      location.reload();
    }
    return response;
  }

  async function problemOf(response) {
    try {
      const body = await response.json();
      return body.error || response.statusText;
    } catch (notJson) {
      return response.status + " " + response.statusText;
    }
  }

  function scope() {
    return {
      agentId: agentSelect.value,
      userId: userInput.value.trim(),
    };
  }

  function factsPath(agentId, userId) {
    return "/agents/" + encodeURIComponent(agentId) + "/users/" + encodeURIComponent(userId) +
      "/facts";
  }

  // --- the panels of one reply ------------------------------------------------------

  function contentText(content) {
    if (typeof content === "string") return content;
    if (Array.isArray(content)) {
      return content.map((part) => part.type === "text" ? part.text
        : part.type === "image_url" ? "[image: " + part.image_url.url.slice(0, 80) + "]"
        : JSON.stringify(part)).join("\n");
    }
    return JSON.stringify(content, null, 2);
  }

  function showPrompt(trace) {
    const box = $("prompt");
    box.replaceChildren();
    if (!trace.llmCalls.length) {
      box.append(el("p", { className: "empty", text: "No LLM call was made for this reply." }));
      return;
    }
    trace.llmCalls.forEach((call, index) => {
      const last = index === trace.llmCalls.length - 1;
      const what = [call.step || "outside the chain", call.model,
        call.schema ? "answer: " + call.schema : (call.streamed ? "streamed text" : "text")];
      const details = el("details", { className: "call" },
        el("summary", { text: "Call " + (index + 1) + ": " + what.join(" · ") }));
      if (last) details.open = true;
      for (const message of call.messages) {
        details.append(el("div", { className: "message-sent " + message.role },
          el("span", { className: "role", text: message.role }),
          el("pre", { text: contentText(message.content) })));
      }
      box.append(details);
    });
  }

  function showRoute(trace) {
    const box = $("route");
    box.replaceChildren();
    const route = trace.route;
    if (!route) {
      box.append(el("p", { className: "empty", text: "No route produced this reply." }));
      return;
    }
    box.append(el("p", {}, el("strong", { text: route.name })));
    if (route.chosenBy === "router") {
      box.append(el("p", { text: "Chosen by the router, confidence " +
        Number(route.confidence).toFixed(2) }));
      box.append(el("p", { className: "reasoning", text: route.reasoning }));
    } else if (route.chosenBy === "only_route") {
      box.append(el("p", { text: "Only route: no other route was open, so no choice was asked." }));
    } else {
      box.append(el("p", { text: "Named by the caller." }));
    }
  }

  function showRecalled(trace) {
    const box = $("recalled");
    box.replaceChildren();
    if (!trace.recalledFacts.length) {
      box.append(el("p", { className: "empty", text: "No facts recalled for this message." }));
      return;
    }
    const list = el("ol", { className: "recalled" });
    for (const fact of trace.recalledFacts) {
      const score = fact.score === null ? "exact words" : fact.score.toFixed(3);
      list.append(el("li", {}, el("span", { text: fact.text }),
        el("span", { className: "score", text: "score " + score })));
    }
    box.append(list);
  }

  function showSteps(trace) {
    const box = $("steps");
    box.replaceChildren();
    const table = el("table", { className: "steps" },
      el("thead", {}, el("tr", {}, el("th", { scope: "col", text: "Step" }),
        el("th", { scope: "col", text: "Own ms" }), el("th", { scope: "col", text: "Total ms" }))));
    const body = el("tbody");
    for (const step of trace.steps) {
      const name = el("td", { text: step.step });
      name.style.paddingLeft = (0.4 + step.depth * 1.2) + "em";
      body.append(el("tr", {}, name, el("td", { text: step.ownMs.toFixed(1) }),
        el("td", { text: step.totalMs.toFixed(1) })));
    }
    table.append(body);
    box.append(table,
      el("p", { className: "hint", text: "Own: the step alone. Total: with the steps after it." }));
  }

  function showTools(trace) {
    const box = $("tools");
    const calls = trace.toolCalls || [];
    box.replaceChildren(calls.length ? el("ol", { className: "recalled" }, ...calls.map((call) =>
      el("li", {}, el("strong", { text: call.name }),
        el("pre", { text: JSON.stringify(call.arguments) }),
        el("pre", { className: call.ok ? "" : "error",
          text: call.ok ? JSON.stringify(call.result) : call.error }),
        el("span", { className: "score", text: call.durationMs.toFixed(1) + " ms" }))))
      : el("p", { className: "empty", text: "No tool was called for this reply." }));
  }

  function toolLine(item, text, isError) {
    item.insertBefore(el("p", { className: isError ? "tool error" : "tool", text }),
      item.querySelector(".pick"));
  }

  function offerApproval(item, pending) {
    const ask = el("p", { className: "approval",
      text: "Run " + pending.tool + " " + JSON.stringify(pending.arguments) + "?" });
    const decide = async (approve) => {
      ask.remove();
      const response = await api("/agent/approvals/" + encodeURIComponent(pending.id), {
        method: "POST",
        headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
        body: JSON.stringify({ approve }),
      });
      await converse(response, approve ? "Approved " + pending.tool : "Denied " + pending.tool);
    };
    for (const [label, approve] of [["Approve", true], ["Deny", false]]) {
      const button = el("button", { type: "button", text: label });
      button.addEventListener("click", () => decide(approve));
      ask.append(" ", button);
    }
    item.append(ask);
  }

  function showTurn(turn) {
    selectedTurn = turn;
    for (const item of messages.querySelectorAll(".agent")) {
      item.classList.toggle("selected", item === turn.item);
    }
    if (!turn.trace) return;
    $("turn").textContent = "For the reply to: “" + turn.said + "”";
    showPrompt(turn.trace);
    showRoute(turn.trace);
    showRecalled(turn.trace);
    showSteps(turn.trace);
    showTools(turn.trace);
  }

  // --- the conversation --------------------------------------------------------------

  function parseEvent(block) {
    let name = "message";
    const data = [];
    for (const line of block.split("\n")) {
      if (line.startsWith("event:")) name = line.slice(6).trim();
      else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
    }
    return { name, data: data.length ? JSON.parse(data.join("\n")) : null };
  }

  // Whether this caller gets traces (the server key does; a user token, as a rule, not).
  let traces = true;

  async function send(text) {
    const { agentId, userId } = scope();
    messages.append(el("li", { className: "user" }, el("span", { className: "who", text: userId }),
      el("p", { text })));
    const post = () => api("/agent/input" + (traces ? "?trace=1" : ""), {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
      body: JSON.stringify({ input: { agentId, userId, text } }),
    });
    let response = await post();
    if (response.status === 403 && traces && (await problemOf(response.clone())).includes("trace")) {
      // A user token gets no traces: chat on without them.
      traces = false;
      response = await post();
    }
    await converse(response, text);
  }

  async function converse(response, text) {
    const reply = el("p", { className: "streaming" });
    const pick = el("button", { type: "button", className: "quiet pick", text: "Show trace" });
    const item = el("li", { className: "agent" },
      el("span", { className: "who", text: agentSelect.selectedOptions[0].textContent }), reply, pick);
    messages.append(item);
    const turn = { said: text, item, trace: null };
    pick.addEventListener("click", () => showTurn(turn));
    item.scrollIntoView({ block: "end" });
    if (!response.ok) {
      reply.classList.remove("streaming");
      reply.classList.add("error");
      reply.textContent = await problemOf(response);
      return;
    }
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const event = parseEvent(buffer.slice(0, end));
        buffer = buffer.slice(end + 2);
        if (event.name === "token") {
          reply.append(event.data.text);
        } else if (event.name === "trace") {
          turn.trace = event.data;
          showTurn(turn);
        } else if (event.name === "tool_call") {
          toolLine(item, "→ " + event.data.name + " " + JSON.stringify(event.data.arguments));
        } else if (event.name === "tool_result") {
          toolLine(item, "← " + (event.data.ok ? JSON.stringify(event.data.result)
            : event.data.error), !event.data.ok);
        } else if (event.name === "reply") {
          reply.textContent = event.data.text;
          if (event.data.pendingApproval) offerApproval(item, event.data.pendingApproval);
        } else if (event.name === "error") {
          reply.classList.add("error");
          reply.textContent = event.data.error;
        }
        item.scrollIntoView({ block: "end" });
      }
    }
    reply.classList.remove("streaming");
    reply.classList.add("done");
    // Facts are learned after the reply, in the background: look again a few times.
    for (const timer of factsTimers) clearTimeout(timer);
    factsTimers = [500, 1500, 3000, 6000].map((ms) => setTimeout(loadFacts, ms));
  }

  composer.addEventListener("submit", async (event) => {
    event.preventDefault();
    const text = messageBox.value.trim();
    if (!text || !scope().userId || !agentSelect.value) return;
    messageBox.value = "";
    sendButton.disabled = true;
    try {
      await send(text);
    } catch (failure) {
      say("The message could not be sent: " + failure.message, true);
    } finally {
      sendButton.disabled = false;
      messageBox.focus();
    }
  });

  messageBox.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      composer.requestSubmit();
    }
  });

  // --- the user's facts --------------------------------------------------------------

  function historyList(entries) {
    const list = el("ol", { className: "history" });
    for (const entry of entries) {
      const change = entry.event === "UPDATE" ? entry.oldText + " → " + entry.newText
        : entry.event === "DELETE" ? (entry.oldText || "") : (entry.newText || "");
      list.append(el("li", {},
        el("span", { className: "event", text: entry.event }),
        el("span", { text: change }),
        el("span", { className: "meta",
          text: new Date(entry.at).toLocaleString() + " · " + entry.actor +
            (entry.reason ? " · " + entry.reason : "") })));
    }
    return list;
  }

  async function retire(fact) {
    const { agentId, userId } = scope();
    const response = await api(factsPath(agentId, userId) + "/" + encodeURIComponent(fact.id),
      { method: "DELETE" });
    if (!response.ok) {
      say("The fact could not be retired: " + await problemOf(response), true);
      return;
    }
    say("Retired: " + fact.text);
    await loadFacts();
  }

  async function loadFacts() {
    const { agentId, userId } = scope();
    const box = $("facts");
    if (!agentId || !userId) return;
    const response = await api(factsPath(agentId, userId) + "?includeRetired=true");
    if (!response.ok) {
      box.replaceChildren(el("li", { className: "error", text: await problemOf(response) }));
      return;
    }
    const answer = await response.json();
    const facts = answer.facts;
    const histories = await Promise.all(facts.map(async (fact) => {
      const answer = await api(factsPath(agentId, userId) + "/" + encodeURIComponent(fact.id) +
        "/history");
      return answer.ok ? (await answer.json()).history : [];
    }));
    if (scope().agentId !== agentId || scope().userId !== userId) return;
    const items = facts.map((fact, index) => {
      const item = el("li", { className: fact.retiredAt ? "fact retired" : "fact" },
        el("p", { className: "fact-text", text: fact.text }),
        el("p", { className: "meta", text: (fact.retiredAt ? "retired · " : "active · ") +
          fact.categories.join(", ") }));
      if (!fact.retiredAt) {
        const button = el("button", { type: "button", className: "quiet",
          "aria-label": "Retire: " + fact.text, text: "Retire" });
        button.addEventListener("click", () => retire(fact));
        item.append(button);
      }
      const history = histories[index];
      item.append(el("details", {}, el("summary", { text: "History (" + history.length + ")" }),
        historyList(history)));
      return item;
    });
    if (!items.length) {
      items.push(el("li", { className: "empty", text: "No facts about this user yet." }));
    }
    box.replaceChildren(...items);
    showLearning(answer.learning);
  }

  // Learning waits for the conversation to go quiet: say so, and look again until it is done.
  function showLearning(learning) {
    const note = $("learning-pending");
    clearTimeout(learningTimer);
    const pending = learning && learning.pending ? learning.pending : 0;
    note.hidden = !pending;
    if (!pending) return;
    const idle = learning.learnAfterIdleSeconds;
    note.textContent = "Learning pending: " + pending + (pending === 1 ? " message" : " messages") +
      " waiting (the oldest for " + Math.round(learning.oldestPendingSeconds || 0) + " s). " +
      (idle ? "Facts are learned once the conversation has been quiet for " + idle + " s." :
        "Facts are learned right after each reply.");
    clearTimeout(learningTimer);
    learningTimer = setTimeout(loadFacts, 5000);
  }

  $("refresh-facts").addEventListener("click", loadFacts);

  // --- agent and user ----------------------------------------------------------------

  function newScope() {
    sessionStorage.setItem(USER_STORAGE, userInput.value.trim());
    messages.replaceChildren();
    loadFacts();
  }

  async function loadAgents() {
    const response = await api("/agents");
    if (!response.ok) {
      say("The agents could not be listed: " + await problemOf(response), true);
      return;
    }
    const agents = (await response.json()).agents;
    agentSelect.replaceChildren(...agents.map((agent) =>
      el("option", { value: agent.agentId, text: agent.name + " (" + agent.agentId + ")" })));
    if (!agents.length) say("This server has no agents.", true);
    await loadFacts();
  }

  agentSelect.addEventListener("change", newScope);
  userInput.addEventListener("change", newScope);
  $("who").addEventListener("submit", (event) => event.preventDefault());
  userInput.value = sessionStorage.getItem(USER_STORAGE) || "playground-user";

  if (key) {
    const forget = $("forget-key");
    forget.hidden = false;
    forget.addEventListener("click", () => {
      sessionStorage.removeItem(STORAGE);
      location.reload();
    });
  }
  loadAgents();
})();
