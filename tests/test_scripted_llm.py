"""Trying liz without an LLM key: the scripted model, as a user starts it (real processes)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from openai import OpenAI

from liz.testing.openai_requests import RecordedRequest
from liz.testing.scripted_model import SCRIPTED_PREFIX, answer
from tests.serve_process import free_port, liz_serve
from tests.serve_process import run_liz as liz

NO_LLM = {"OPENAI_API_KEY": "", "OPENROUTER_API_KEY": "", "OPENAI_BASE_URL": ""}


def chat_request(prompt: str, schema: str | None = None) -> RecordedRequest:
    body: dict[str, object] = {"model": "m", "messages": [{"role": "user", "content": prompt}]}
    if schema is not None:
        body["response_format"] = {"type": "json_schema", "json_schema": {"name": schema}}
    return RecordedRequest("POST", "/v1/chat/completions", body, {})


def test_the_framework_calls_get_answers_that_fit_them() -> None:
    route = answer(chat_request("- tweet: write a post\n- conversation: talk", "RouteChoice"))
    assert isinstance(route, dict) and route["route"] == "conversation"
    extraction = (
        '<MESSAGE number="1">\nuser: Hello there. My cat is called Rex.\n'
        "assistant: Nice.\n</MESSAGE>"
    )
    facts = answer(chat_request(extraction, "ExtractedFacts"))
    assert isinstance(facts, dict)
    assert [fact["text"] for fact in facts["facts"]] == ["User said: My cat is called Rex"]
    plan = "Stored facts:\n1. [user] User said: I am Ann\n\n"
    plan += "New facts:\n1. [user] User said: I am Ann\n2. [user] User said: I live in Oslo\n"
    plan += "\nFor every new fact give one decision"
    decisions = answer(chat_request(plan, "ReconcilePlan"))
    assert isinstance(decisions, dict)
    assert [(d["event"], d["id"]) for d in decisions["decisions"]] == [("NOOP", 1), ("ADD", None)]
    reply = answer(chat_request("<CURRENT_USER_INPUT>\nHi!\n</CURRENT_USER_INPUT>"))
    assert isinstance(reply, str) and reply.startswith(SCRIPTED_PREFIX) and '"Hi!"' in reply


@pytest.mark.slow
def test_serve_scripted_answers_and_remembers_without_a_key(tmp_path: Path) -> None:
    env = {**NO_LLM, "DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'try.db'}"}
    with liz_serve(env, tmp_path, flags=("--scripted",)) as url:
        said = {"agentId": "business-advisor", "userId": "ann", "text": "My shop sells pies."}
        first = httpx.post(f"{url}/agent/input", json={"input": said}, timeout=30)
        facts_url = f"{url}/agents/business-advisor/users/ann/facts"
        deadline = time.monotonic() + 30
        while not httpx.get(facts_url, timeout=5).json().get("facts"):
            assert time.monotonic() < deadline, "the scripted extraction stored no fact"
            time.sleep(0.2)
        asked = {**said, "text": "Which pies should my shop sell?"}
        second = httpx.post(f"{url}/agent/input", json={"input": asked}, timeout=30)
    assert first.status_code == 200, first.text
    assert first.json()["text"].startswith(SCRIPTED_PREFIX)
    assert second.status_code == 200 and "User said: My shop sells pies" in second.json()["text"]


@pytest.mark.slow
def test_chat_scripted_answers_a_line_and_labels_it_with_the_agents_name(tmp_path: Path) -> None:
    env = {**NO_LLM, "DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'chat.db'}"}
    result = liz(
        "chat", "--scripted", "--agent", "business-advisor", env=env, cwd=tmp_path, stdin="Hi\n"
    )
    assert result.returncode == 0, result.stderr
    assert f'Morgan> {SCRIPTED_PREFIX} You said: "Hi".' in result.stdout


@pytest.mark.slow
def test_the_scripted_model_is_refused_when_an_llm_is_configured(tmp_path: Path) -> None:
    env = {**NO_LLM, "OPENAI_API_KEY": "sk-real", "LIZ_SCRIPTED_LLM": "true"}
    served = liz("serve", "--port", "9", env=env, cwd=tmp_path)
    chatted = liz(
        "chat",
        "--scripted",
        env={**NO_LLM, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"},
        cwd=tmp_path,
        stdin="Hi\n",
    )
    for result, named in ((served, "OPENAI_API_KEY"), (chatted, "OPENAI_BASE_URL")):
        assert result.returncode == 2
        assert result.stderr.count("\n") == 1 and named in result.stderr, result.stderr


@pytest.mark.slow
def test_scripted_llm_serves_the_model_alone_for_any_openai_client(tmp_path: Path) -> None:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "liz", "scripted-llm", "--port", str(port)],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        client = OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="none", max_retries=8)
        reply = client.chat.completions.create(
            model="any", messages=[{"role": "user", "content": "Ping"}]
        )
        vectors = [
            client.embeddings.create(model="any", input="same words").data[0].embedding
            for _ in range(2)
        ]
    finally:
        process.terminate()
        process.wait(timeout=15)
    assert (reply.choices[0].message.content or "").startswith(
        f'{SCRIPTED_PREFIX} You said: "Ping"'
    )
    assert vectors[0] == vectors[1] and len(vectors[0]) > 0
