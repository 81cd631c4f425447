"""A small client of Prometheus's HTTP API: ``/api/v1/query`` and ``/api/v1/query_range``.

Only the standard library (urllib): the monitor adds no HTTP dependency for it.
Credentials come from the environment, never the command line (where ``ps``
shows them to every user of the node):

* ``GPUTOP_HINTS_PROMETHEUS_TOKEN``: a bearer token (``Authorization: Bearer``);
* ``GPUTOP_HINTS_PROMETHEUS_USER`` and ``GPUTOP_HINTS_PROMETHEUS_PASSWORD``: HTTP
  basic auth.

Every failure is a :class:`PrometheusError` whose message says what went wrong
and what to do: unreachable, auth refused, an answer that is not Prometheus's,
a query Prometheus rejects (its own error text).
"""

from __future__ import annotations

import base64
import http.client
import json
import math
import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

ENV_TOKEN = "GPUTOP_HINTS_PROMETHEUS_TOKEN"
ENV_USER = "GPUTOP_HINTS_PROMETHEUS_USER"
ENV_PASSWORD = "GPUTOP_HINTS_PROMETHEUS_PASSWORD"
TIMEOUT_S = 15.0
"""How long one HTTP request may take before the query is given up."""
MAX_POINTS = 11_000
"""Prometheus refuses a range query of more points per series than this (its
``query_range`` limit); the step is widened to stay under it."""


class PrometheusError(Exception):
    """A query could not be answered; the message is for the user."""


@dataclass(frozen=True, slots=True)
class Series:
    """One time series of a query's answer: its labels and (time, value) points, in
    time order; NaN and infinite values are left out."""

    labels: Mapping[str, str]
    points: tuple[tuple[float, float], ...]


def check_url(url: str) -> str:
    """``url`` without a trailing slash; ValueError unless it is http(s) with a host."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(
            f"--prometheus {url!r}: give Prometheus's base URL, e.g. http://prometheus:9090"
        )
    if parts.username or parts.password:
        raise ValueError(
            f"--prometheus: no credentials in the URL (every user of this node can read "
            f"the command line); set {ENV_USER} and {ENV_PASSWORD}, or {ENV_TOKEN}"
        )
    return url.rstrip("/")


def _number(text: object) -> float | None:
    try:
        value = float(str(text))
    except ValueError:
        return None
    return value if math.isfinite(value) else None


class PrometheusClient:
    """Queries one Prometheus server (see the module docstring)."""

    def __init__(
        self,
        url: str,
        *,
        timeout_s: float = TIMEOUT_S,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.url = check_url(url)
        self.timeout_s = timeout_s
        env = os.environ if environ is None else environ
        self._headers = {"Accept": "application/json", "User-Agent": "gputop-hints"}
        token = env.get(ENV_TOKEN)
        user = env.get(ENV_USER)
        if token:
            self._headers["Authorization"] = f"Bearer {token}"
        elif user:
            pair = f"{user}:{env.get(ENV_PASSWORD, '')}".encode()
            self._headers["Authorization"] = "Basic " + base64.b64encode(pair).decode()
        self.requests = 0
        """HTTP requests made so far (benchmarks count them)."""

    def query(self, expr: str, at: float | None = None) -> list[Series]:
        """The instant vector ``expr`` (now, or at ``at``): one point per series."""
        params = {"query": expr}
        if at is not None:
            params["time"] = f"{at:.3f}"
        data = self._get("/api/v1/query", params)
        if data.get("resultType") != "vector":
            raise PrometheusError(f"{self.url}: {expr!r} is not an instant vector query")
        out = []
        for item in self._items(data):
            value = item.get("value") or (None, None)
            if not isinstance(value, list | tuple) or len(value) != 2:
                raise self._malformed("a value that is not a [time, value] pair")
            t, v = _number(value[0]), _number(value[1])
            points = ((t, v),) if t is not None and v is not None else ()
            out.append(Series(self._labels(item), points))
        return out

    def query_range(self, expr: str, start: float, end: float, step: float) -> list[Series]:
        """``expr`` evaluated every ``step`` s from ``start`` to ``end`` (widened to keep
        each series under :data:`MAX_POINTS`)."""
        step = max(step, (end - start) / (MAX_POINTS - 1), 0.001)
        params = {
            "query": expr,
            "start": f"{start:.3f}",
            "end": f"{end:.3f}",
            "step": f"{step:.3f}",
        }
        data = self._get("/api/v1/query_range", params)
        out = []
        for item in self._items(data):
            points = []
            values = item.get("values") or ()
            if not isinstance(values, list):
                raise self._malformed("'values' that are not a list")
            for pair in values:
                if not isinstance(pair, list) or len(pair) != 2:
                    raise self._malformed("a value that is not a [time, value] pair")
                t, v = _number(pair[0]), _number(pair[1])
                if t is not None and v is not None:
                    points.append((t, v))
            out.append(Series(self._labels(item), tuple(points)))
        return out

    def _items(self, data: dict[str, Any]) -> list[dict[str, Any]]:
        """The answer's result series, each checked to be an object."""
        result = data.get("result") or []
        if not isinstance(result, list) or not all(isinstance(i, dict) for i in result):
            raise self._malformed("a result that is not a list of series objects")
        return result

    def _labels(self, item: dict[str, Any]) -> dict[str, str]:
        metric = item.get("metric") or {}
        if not isinstance(metric, dict) or not all(isinstance(v, str) for v in metric.values()):
            raise self._malformed("a series whose labels are not an object of strings")
        return metric

    def _malformed(self, what: str) -> PrometheusError:
        return PrometheusError(
            f"Prometheus at {self.url} answered 'success' with {what}: "
            "is it Prometheus's HTTP API, or a proxy in front of it?"
        )

    def _get(self, path: str, params: Mapping[str, str]) -> dict[str, Any]:
        request = urllib.request.Request(
            self.url + path + "?" + urllib.parse.urlencode(params), headers=self._headers
        )
        self.requests += 1
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                body = response.read()
        except urllib.error.HTTPError as exc:
            raise PrometheusError(self._http_error(exc)) from None
        except http.client.IncompleteRead as exc:
            raise PrometheusError(
                f"Prometheus at {self.url} cut its answer short ({len(exc.partial)} bytes "
                "came of it): the server or a proxy between closed the connection"
            ) from None
        except http.client.HTTPException as exc:
            raise PrometheusError(
                f"{self.url} did not answer in HTTP ({type(exc).__name__}): is it "
                "Prometheus's base URL, and the port its web server listens on?"
            ) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise PrometheusError(
                f"Prometheus at {self.url} is unreachable: {reason} "
                "(is the URL right, and is it reachable from this node?)"
            ) from None
        return self._data(body)

    def _http_error(self, exc: urllib.error.HTTPError) -> str:
        if exc.code in (401, 403):
            how = (
                "the credentials from the environment were refused"
                if "Authorization" in self._headers
                else f"set {ENV_TOKEN} (a bearer token) or {ENV_USER} and {ENV_PASSWORD}"
            )
            return f"Prometheus at {self.url} refused the query (HTTP {exc.code}): {how}"
        try:
            detail = json.loads(exc.read()).get("error") or ""
        except (ValueError, AttributeError, OSError, RecursionError, http.client.HTTPException):
            detail = ""
        return f"Prometheus at {self.url} answered HTTP {exc.code}" + (
            f": {detail}" if detail else ""
        )

    def _data(self, body: bytes) -> dict[str, Any]:
        try:
            answer = json.loads(body)
        except (ValueError, RecursionError):  # RecursionError: JSON nested too deep
            answer = None
        if not isinstance(answer, dict) or "status" not in answer:
            raise PrometheusError(
                f"{self.url} did not answer like Prometheus's HTTP API (no JSON status): "
                "is it Prometheus's base URL?"
            )
        if answer["status"] != "success":
            raise PrometheusError(
                f"Prometheus at {self.url}: {answer.get('errorType', 'error')}: "
                f"{answer.get('error', 'no detail')}"
            )
        data = answer.get("data")
        if not isinstance(data, dict):
            raise PrometheusError(f"Prometheus at {self.url} answered without data")
        return data
