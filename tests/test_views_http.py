"""views/http.py: the JSON error of the workspaces' twins, made by one decorator."""

import orjson
from django.http import Http404, HttpResponse
from django.test import RequestFactory

from sessionviewer.forms import BadParameter
from sessionviewer.views.http import errors_as_json


def _answer(view):
    return errors_as_json(view)(RequestFactory().get("/api/workspaces/0/alice"))


def test_errors_as_json_turns_http404_into_a_json_404_with_its_message():
    def view(request):
        raise Http404("no memory root 7")

    response = _answer(view)
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert orjson.loads(response.content) == {"error": "no memory root 7", "status": 404}


def test_errors_as_json_turns_a_bad_parameter_into_a_json_400_naming_it():
    def view(request):
        raise BadParameter("_page", "expected a whole number, not 'x'")

    response = _answer(view)
    assert response.status_code == 400
    assert orjson.loads(response.content) == {
        "error": "_page: expected a whole number, not 'x'",
        "status": 400,
    }


def test_errors_as_json_passes_a_response_through():
    def view(request):
        return HttpResponse("fine")

    assert _answer(view).content == b"fine"


def test_errors_as_json_keeps_the_view_name():
    def api_something(request):
        return HttpResponse()

    assert errors_as_json(api_something).__name__ == "api_something"
