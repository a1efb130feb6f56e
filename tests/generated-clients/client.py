"""What an app does with a client that openapi-python-client generated from the gateway's
/openapi.json: create a session, send to it, run in it, run in a new session, read its events.
Each answer must parse into the generated models (an event into its own class, not a dict).

    python client.py BASE_URL      (the generated package `airlock_client` on PYTHONPATH)

Prints one JSON line of what it saw, for tests/tests/all/generated_clients.rs to check."""

import json
import sys

from airlock_client import Client
from airlock_client.api.input_ import send_message
from airlock_client.api.observation import get_session_events_page
from airlock_client.api.runs import run_in_new_session, run_in_session
from airlock_client.api.sessions import create_session
from airlock_client.models import (
    CreateBody,
    EventsPage,
    MessageAccepted,
    NewRunBody,
    RunBody,
    RunResult,
    SendBody,
    SessionView,
)


def expect(answer, model):
    assert isinstance(answer, model), f"expected {model.__name__}, got {answer!r}"
    return answer


client = Client(base_url=sys.argv[1], raise_on_unexpected_status=True, timeout=60)

session = expect(create_session.sync(client=client, body=CreateBody()), SessionView)
sent = send_message.sync(
    session.session_id, client=client, body=SendBody(content="hello"), idempotency_key="hello-1"
)
expect(sent, MessageAccepted)
run = expect(
    run_in_session.sync(session.session_id, client=client, body=RunBody(content="and now?")),
    RunResult,
)
fresh = expect(run_in_new_session.sync(client=client, body=NewRunBody(content="hi")), RunResult)
page = expect(get_session_events_page.sync(session.session_id, client=client), EventsPage)

print(
    json.dumps(
        {
            "session": session.session_id,
            "sent": sent.message_id,
            "run": run.final_response,
            "fresh": fresh.final_response,
            "freshSession": fresh.session_id,
            "events": [type(event).__name__ for event in page.events],
        }
    )
)
