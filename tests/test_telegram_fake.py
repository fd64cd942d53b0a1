"""The fake Bot API answers in Telegram's wire format, whatever form the body takes."""

from __future__ import annotations

import concurrent.futures
import json
import time

import httpx

from liz.testing.fake_telegram import FakeTelegram

TOKEN = "99:fake"


def test_send_message_reads_json_form_and_multipart_bodies() -> None:
    telegram = FakeTelegram(token=TOKEN)
    reply = {"message_id": 5, "allow_sending_without_reply": True}
    with telegram.serve() as root, httpx.Client(base_url=f"{root}/bot{TOKEN}") as client:
        as_json = client.post(
            "/sendMessage", json={"chat_id": 7, "text": "one", "reply_parameters": reply}
        )
        as_form = client.post(
            "/sendMessage",
            data={"chat_id": "7", "text": "two", "reply_parameters": json.dumps(reply)},
        )
        as_multipart = client.post(
            "/sendMessage",
            data={"chat_id": "7", "text": "three"},
            files={"unused": ("a.txt", b"file body")},
        )
    for response in (as_json, as_form, as_multipart):
        assert response.status_code == 200
        assert response.json()["ok"] is True
        assert response.json()["result"]["chat"]["id"] == 7
    assert telegram.sent_to(7) == ["one", "two", "three"]
    assert [m.reply_to for m in telegram.sent] == [5, 5, None]
    assert [m.content_type for m in telegram.sent] == [
        "application/json",
        "application/x-www-form-urlencoded",
        "multipart/form-data",
    ]


def test_an_offset_confirms_earlier_updates_and_a_wrong_token_is_401() -> None:
    telegram = FakeTelegram(token=TOKEN)
    first = telegram.say("hi", user_id=7)
    second = telegram.say("@liz_test_bot 😀 hi", user_id=7, chat_id=-5, chat_type="group")
    with telegram.serve() as root:
        updates = httpx.post(f"{root}/bot{TOKEN}/getUpdates", json={"timeout": 0}).json()
        later = httpx.post(
            f"{root}/bot{TOKEN}/getUpdates", json={"offset": second, "timeout": 0}
        ).json()
        wrong = httpx.post(f"{root}/bot99:other/getMe")
        telegram.rate_limit("getMe", 3)
        limited = httpx.get(f"{root}/bot{TOKEN}/getMe")
    assert [u["update_id"] for u in updates["result"]] == [first, second]
    assert [u["update_id"] for u in later["result"]] == [second]
    assert later["result"][0]["message"]["entities"] == [
        {"type": "mention", "offset": 0, "length": 13}
    ]
    assert telegram.pending() == 1
    assert wrong.status_code == 401 and wrong.json()["ok"] is False
    assert limited.status_code == 429
    assert limited.json()["parameters"] == {"retry_after": 3}


def test_a_long_poll_shows_as_polling_until_an_update_comes() -> None:
    telegram = FakeTelegram(token=TOKEN)
    with telegram.serve() as root, httpx.Client(base_url=f"{root}/bot{TOKEN}") as client:
        assert not telegram.polling()
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            waiting = pool.submit(client.post, "/getUpdates", json={"timeout": 20})
            deadline = time.monotonic() + 10
            while not telegram.polling() and time.monotonic() < deadline:
                time.sleep(0.01)
            assert telegram.polling()
            update = telegram.say("hi", user_id=7)
            answer = waiting.result(timeout=10).json()
        assert [u["update_id"] for u in answer["result"]] == [update]
        assert not telegram.polling()
