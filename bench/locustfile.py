"""People reading one index while indexers write to it (issue 28's load bench, bench/load.py).

Each simulated person logs in on one of the web processes (LOAD_HOSTS, a comma-separated list
of base URLs: a load balancer's round robin, one person to one host), learns a page of
sessions and projects from the list, then reads: the list, a search, Activity, a project page
and a transcript's first screen, with a pause of 1-3 s between two pages. The request names
are the page types, so locust's figures come per page.

    LOAD_HOSTS=http://127.0.0.1:8001,http://127.0.0.1:8002 LOAD_USER=load LOAD_PASSWORD=... \
        locust -f bench/locustfile.py --headless -u 50 -r 10 -t 300s --csv bench/out/load

bench/load.py runs it with everything it needs; this file only says what a person does.
"""

from __future__ import annotations

import itertools
import os
import random
import re
import time

from locust import HttpUser, between, events, task

HOSTS = itertools.cycle(filter(None, os.environ.get("LOAD_HOSTS", "").split(",")))
USER = os.environ.get("LOAD_USER", "load")
PASSWORD = os.environ.get("LOAD_PASSWORD", "")
# Words of bench/generate.py's vocabulary: common, rare and a phrase.
QUERIES = ("index", "database request", "parse", '"return path"', "config*", "session reader")

# Every request's end (epoch seconds), time and outcome, one CSV line each, when LOAD_REQUESTS
# names a file: bench/load.py takes the figures after the last login from it (locust's own
# are of the whole run).
REQUESTS = open(os.environ["LOAD_REQUESTS"], "w", buffering=1) if os.environ.get("LOAD_REQUESTS") else None  # noqa: SIM115 - open for the run


@events.request.add_listener
def record(name: str, response_time: float, exception: BaseException | None = None, **kwargs) -> None:
    if REQUESTS is not None:
        REQUESTS.write(f"{name},{time.time():.3f},{response_time:.1f},{int(exception is not None)}\n")


SESSION_LINK = re.compile(r'href="(/sessions/\d+/)"')
PROJECT_LINK = re.compile(r'href="(/projects/[^"?#]+/)"')
CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


class Reader(HttpUser):
    wait_time = between(1, 3)

    def on_start(self) -> None:
        host = next(HOSTS, None)
        if host:
            self.client.base_url = host
        page = self.client.get("/accounts/login/", name="login form")
        token = CSRF.search(page.text)
        self.client.post(
            "/accounts/login/",
            {"username": USER, "password": PASSWORD, "csrfmiddlewaretoken": token.group(1) if token else ""},
            headers={"Referer": f"{self.client.base_url}/accounts/login/"},
            name="login",
        )
        listing = self.client.get("/?_size=100", name="list").text
        self.sessions = sorted(set(SESSION_LINK.findall(listing))) or ["/"]
        self.projects = sorted(set(PROJECT_LINK.findall(listing))) or ["/"]

    @task(3)
    def list_page(self) -> None:
        self.client.get(f"/?_page={random.randint(1, 20)}", name="list")

    @task(2)
    def search(self) -> None:
        self.client.get("/", params={"q": random.choice(QUERIES)}, name="search")

    @task(1)
    def activity(self) -> None:
        self.client.get(
            "/activity/", params={"_range": random.choice(["7", "30", "90", "all"])}, name="activity"
        )

    @task(1)
    def project(self) -> None:
        self.client.get(random.choice(self.projects), name="project")

    @task(3)
    def transcript(self) -> None:
        self.client.get(random.choice(self.sessions), name="transcript first screen")
