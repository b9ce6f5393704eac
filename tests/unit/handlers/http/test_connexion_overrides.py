"""The overrides of Connexion internals: each still finds what it relies on, and still works.

A failure in a ``TestRelies...`` check means a Connexion upgrade changed an internal the
override leans on (read cardvault.handlers.http.connexion_overrides for why each exists)."""

from __future__ import annotations

import copy
import inspect
from collections.abc import Iterator

import pytest
from connexion.apps.asynchronous import AsyncApi, AsyncASGIApp, AsyncOperation
from connexion.datastructures import MediaTypeDict
from connexion.decorators.main import ASGIDecorator, BaseDecorator
from connexion.exceptions import InvalidSpecification
from connexion.lifecycle import ConnexionRequest
from connexion.middleware.abstract import ROUTING_CONTEXT
from connexion.middleware.main import ConnexionMiddleware
from connexion.middleware.routing import RoutingOperation
from connexion.middleware.swagger_ui import SwaggerUIMiddleware
from connexion.security import (
    NO_VALUE,
    AbstractSecurityHandler,
    BearerSecurityHandler,
    SecurityHandlerFactory,
)
from connexion.spec import OpenAPISpecification, Specification
from connexion.uri_parsing import OpenAPIURIParser
from connexion.validators import VALIDATOR_MAP, JSONRequestBodyValidator, ParameterValidator
from connexion.validators.abstract import AbstractRequestBodyValidator
from starlette.testclient import TestClient

from cardvault.domain.db import Database
from cardvault.handlers.http import auth, connexion_overrides
from cardvault.handlers.http.app import create_app
from cardvault.handlers.http.connexion_overrides import (
    VALIDATORS,
    Bearer,
    DocsUI,
    FieldParameterValidator,
    JSONBodyValidator,
    OnceDecoratedApi,
    OnceDecoratedOperation,
    OnceDecorator,
    SameBearer,
    WholeValuesParser,
)
from cardvault.settings import Settings
from cardvault.spec import spec_document
from tests.conftest import Api
from tests.unit.handlers.test_cards import assert_error


def _parameters(function: object) -> list[str]:
    return list(inspect.signature(function).parameters)  # type: ignore[arg-type]


@pytest.fixture
def built(settings: Settings, database: Database) -> Iterator[tuple[object, TestClient]]:
    app = create_app(settings, db=database)
    with TestClient(app) as client:
        yield app, client


class TestOnceDecorator:
    def test_relies_on_connexion_building_the_request_and_decorating_per_call(self) -> None:
        source = inspect.getsource(ASGIDecorator.__call__)
        assert "self.framework.get_request(" in source and "uri_parser=self.uri_parser" in source
        assert "scope=scope" in source and "receive=receive" in source
        assert "self.decorate(function)" in source
        assert _parameters(BaseDecorator.decorate) == ["self", "function"]
        assert isinstance(inspect.getattr_static(BaseDecorator, "uri_parser"), property)

    @pytest.mark.fresh_app  # it counts the decorations of an app that has served nothing yet
    def test_decorates_each_operation_once_across_requests(
        self, api: Api, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        calls: list[str] = []
        decorate = OnceDecorator.decorate

        def counted(self: OnceDecorator, function: object) -> object:
            calls.append(getattr(function, "__name__", ""))
            return decorate(self, function)  # type: ignore[arg-type]

        monkeypatch.setattr(OnceDecorator, "decorate", counted)
        for _ in range(3):
            assert api.get("/v1/folders").status_code == 200
        assert len(calls) == 1


class TestOnceDecoratedOperation:
    def test_relies_on_the_operation_calling_fn_and_keeping_its_arguments(self) -> None:
        assert isinstance(inspect.getattr_static(AsyncOperation, "fn"), property)
        assert "self.fn()" in inspect.getsource(AsyncOperation.__call__)
        init = inspect.getsource(AsyncOperation.__init__)
        for attribute in (
            "self._fn = fn",
            "self.jsonifier = jsonifier",
            "self.pythonic_params = pythonic_params",
        ):
            assert attribute in init

    def test_the_app_serves_its_operations_through_it(self, built: tuple[object, TestClient]) -> None:
        app, _ = built
        apis = [api for apis in app._middleware_app.apis.values() for api in apis]  # type: ignore[attr-defined]
        assert apis and all(isinstance(api, OnceDecoratedApi) for api in apis)
        operations = [operation for api in apis for operation in api.operations.values()]
        assert operations and all(isinstance(o, OnceDecoratedOperation) for o in operations)
        operation = operations[0]
        assert operation.fn is operation.fn  # made once


class TestOnceDecoratedApi:
    def test_relies_on_api_cls_and_from_operation(self) -> None:
        assert AsyncASGIApp.api_cls is AsyncApi
        assert _parameters(AsyncApi.make_operation) == ["self", "operation"]
        assert _parameters(AsyncOperation.from_operation) == ["operation", "pythonic_params", "jsonifier"]

    def test_the_app_builds_it(self, settings: Settings, database: Database) -> None:
        app = create_app(settings, db=database)
        # Until the app starts, the middleware's app is the one add_api builds its APIs in.
        assert app.middleware.app is app._middleware_app
        assert app._middleware_app.api_cls is OnceDecoratedApi  # type: ignore[attr-defined]


class TestDocsUI:
    def test_relies_on_the_swagger_middleware_keeping_the_next_app(self) -> None:
        assert _parameters(SwaggerUIMiddleware.__init__) == ["self", "app"]
        assert "self.app = app" in inspect.getsource(SwaggerUIMiddleware.__init__)

    def test_replaces_only_the_swagger_middleware_in_connexions_stack(self) -> None:
        source = inspect.getsource(create_app)
        for middleware in ConnexionMiddleware.default_middlewares:
            expected = DocsUI if middleware is SwaggerUIMiddleware else middleware
            assert f"        {expected.__name__},\n" in source

    def test_serves_the_spec_and_the_docs_and_passes_the_rest_on(
        self, built: tuple[object, TestClient]
    ) -> None:
        _, client = built
        assert client.get("/v1/openapi.json").json()["openapi"] == "3.0.3"
        assert "swagger-ui" in client.get("/v1/ui/").text
        assert client.get("/v1/health").json() == {"status": "ok"}


class TestInitSpecOnce:
    @pytest.fixture(autouse=True)
    def _installed(self) -> None:
        connexion_overrides.build_specs_once()  # as the app factory does

    def test_connexions_init_still_sets_what_the_app_keeps_and_only_base_path_changes_it(self) -> None:
        # An upgrade that builds a spec otherwise would silently break the once-per-process
        # build, and this must fail.
        source = inspect.getsource(connexion_overrides._CONNEXION_SPEC_INIT)
        for line in (
            "self._raw_spec = copy.deepcopy(raw_spec)",
            "self._validate_spec(raw_spec)",
            "self._spec = resolve_refs(raw_spec, base_uri=base_uri)",
            "self._base_uri = base_uri",
        ):
            assert line in source
        setter = inspect.getsource(OpenAPISpecification.base_path.fset)  # type: ignore[attr-defined]
        assert 'self._raw_spec["servers"] = user_servers' in setter
        assert 'self._spec["servers"] = user_servers' in setter
        assert Specification.__init__ is connexion_overrides.init_spec_once

    def test_each_spec_is_connexions_own_and_setting_its_base_path_changes_no_other(self) -> None:
        _, spec = spec_document()
        first = OpenAPISpecification.from_dict(copy.deepcopy(spec))
        second = first.with_base_path("/elsewhere")
        third = OpenAPISpecification.from_dict(copy.deepcopy(spec))
        assert second.base_path == "/elsewhere" and first.base_path == third.base_path == "/v1"
        assert third.raw == first.raw and third.raw == spec
        assert third.get_operation("/cards", "get") == first.get_operation("/cards", "get")
        assert "$ref" not in str(third.get_operation("/cards", "get")["responses"]["200"])

    def test_a_spec_that_differs_from_the_built_one_is_still_validated_in_full(self) -> None:
        _, spec = spec_document()
        OpenAPISpecification.from_dict(copy.deepcopy(spec))  # ours, built (once)
        broken = copy.deepcopy(spec)
        broken["paths"]["/cards"]["get"]["responses"] = "none"
        with pytest.raises(InvalidSpecification):
            OpenAPISpecification.from_dict(broken)


class TestBuildSpecsOnce:
    def test_nothing_is_patched_until_the_app_factory_asks(self) -> None:
        # Importing the module leaves Connexion as it is: only build_specs_once (which
        # create_app calls) replaces Specification.__init__.
        source = inspect.getsource(connexion_overrides)
        assert source.count("Specification.__init__ = init_spec_once") == 1
        assert "    Specification.__init__ = init_spec_once" in source

    def test_the_app_factory_installs_it(self, settings: Settings, database: Database) -> None:
        create_app(settings, db=database)
        assert Specification.__init__ is connexion_overrides.init_spec_once


class TestScopeExtensions:
    def test_relies_on_connexions_routing_and_security_keys(self) -> None:
        assert ROUTING_CONTEXT == "connexion_routing"
        routing = inspect.getsource(RoutingOperation.__call__)
        assert 'extensions = original_scope.setdefault("extensions", {})' in routing
        assert '"operation_id": self.operation_id' in routing
        # The verified credential's subject goes into the request's context, which is the
        # scope's extensions["connexion_context"].
        assert 'setdefault("connexion_context", {})' in inspect.getsource(ConnexionRequest)
        verify = inspect.getsource(SecurityHandlerFactory.verify_security)
        assert "request.context.update(" in verify and '"user": token_info.get("sub"' in verify

    def test_readers_of_a_scope_with_and_without_them(self) -> None:
        empty: dict[str, object] = {"type": "http"}
        assert connexion_overrides.routed_operation(empty) is None
        assert connexion_overrides.routed_user(empty) is None
        shared = connexion_overrides.shared_extensions(empty)
        shared[ROUTING_CONTEXT] = {"operation_id": "cardvault.handlers.cards.list_cards"}
        shared["connexion_context"] = {"user": "acc_1"}
        assert connexion_overrides.routed_operation(empty) == "cardvault.handlers.cards.list_cards"
        assert connexion_overrides.routed_user(empty) == "acc_1"

    def test_a_request_is_counted_and_logged_under_its_operation_and_account(
        self, api: Api, caplog: pytest.LogCaptureFixture
    ) -> None:
        with caplog.at_level("INFO", logger="cardvault.requests"):
            assert api.get("/v1/cards").status_code == 200
        line = next(r for r in caplog.records if r.name == "cardvault.requests")
        assert line.operation == "listCards"  # type: ignore[attr-defined]
        assert line.accountId == api.account_id  # type: ignore[attr-defined]


class TestBearer:
    def test_relies_on_get_fn_resolving_the_verifier_through_resolve_func(self) -> None:
        assert issubclass(BearerSecurityHandler, AbstractSecurityHandler)
        assert "self._resolve_func(security_scheme)" in inspect.getsource(AbstractSecurityHandler.get_fn)
        assert _parameters(AbstractSecurityHandler._resolve_func) == ["self", "security_scheme"]

    def test_verifies_with_authenticate_api(self) -> None:
        # the API's check: auth.authenticate, and an /mcp token only on /mcp's own calls
        assert Bearer()._resolve_func({}) is auth.authenticate_api

    def test_refuses_a_bad_key(self, app_client: TestClient) -> None:
        response = app_client.get("/v1/cards", headers={"Authorization": "Bearer cvk_short"})
        assert_error(response, 401, "INVALID_API_KEY")


class TestSameBearer:
    def test_relies_on_get_fn_and_the_no_value_sentinel(self) -> None:
        assert _parameters(AbstractSecurityHandler.get_fn) == ["self", "security_scheme", "required_scopes"]
        assert "NO_VALUE" in inspect.getsource(AbstractSecurityHandler._generic_check)

    def test_finds_nothing(self) -> None:
        assert SameBearer().get_fn({}, [])(None) is NO_VALUE

    def test_a_good_key_still_passes(self, api: Api) -> None:
        assert api.get("/v1/cards").status_code == 200


class TestJSONBodyValidator:
    def test_relies_on_the_body_being_parsed_then_validated(self) -> None:
        source = inspect.getsource(AbstractRequestBodyValidator.wrap_receive)
        assert "await self._parse(stream(), scope=scope)" in source and "self._validate(body)" in source
        assert _parameters(JSONRequestBodyValidator._parse) == ["self", "stream", "scope"]
        assert _parameters(JSONRequestBodyValidator._validate) == ["self", "body"]
        assert isinstance(inspect.getattr_static(JSONRequestBodyValidator, "_validator"), property)
        init = inspect.getsource(AbstractRequestBodyValidator.__init__)
        assert "self._schema = schema" in init and "self._nullable = nullable" in init

    def test_answers_400_with_our_message_for_a_body_not_in_utf8(self, api: Api) -> None:
        response = api.client.post(
            "/v1/folders",
            content=b'{"name": "\xff"}',
            headers={**api.headers, "Content-Type": "application/json"},
        )
        assert_error(response, 400, "INVALID_INPUT")
        assert response.json()["error"] == "The request body is not valid UTF-8."


class TestFieldParameterValidator:
    def test_relies_on_the_parameter_validators_attributes(self) -> None:
        assert _parameters(ParameterValidator.validate_request) == ["self", "request"]
        assert "self.validate_request(request)" in inspect.getsource(ParameterValidator.validate)
        assert _parameters(ParameterValidator.validate_query_parameter_list) == [
            "self",
            "request",
            "security_params",
        ]
        init = inspect.getsource(ParameterValidator.__init__)
        for attribute in ("self.parameters", "self.strict_validation", "self.security_query_params"):
            assert attribute in init

    def test_lists_an_unknown_query_parameter(self, api: Api) -> None:
        response = api.get("/v1/cards?nope=1")
        assert_error(response, 400, "INVALID_INPUT")
        assert response.json()["details"]["fields"] == [
            {"location": "query", "field": "nope", "message": "is not a parameter of this operation"}
        ]


class TestValidators:
    def test_relies_on_connexions_validator_map_keys(self) -> None:
        assert {"parameter", "body"} <= set(VALIDATOR_MAP)
        assert isinstance(VALIDATOR_MAP["body"], dict) and "*/*json" in VALIDATOR_MAP["body"]

    def test_plugs_ours_in(self) -> None:
        assert VALIDATORS["parameter"] is FieldParameterValidator
        assert isinstance(VALIDATORS["body"], MediaTypeDict)
        assert VALIDATORS["body"]["application/json"] is JSONBodyValidator


class TestWholeValuesParser:
    def test_relies_on_resolve_params_calling_the_two_static_methods(self) -> None:
        source = inspect.getsource(OpenAPIURIParser.resolve_params)
        assert "values = self._resolve_param_duplicates(values, param_defn, _in)" in source
        assert "self._split(values, param_defn, _in)" in source
        assert isinstance(inspect.getattr_static(OpenAPIURIParser, "_split"), staticmethod)

    def test_keeps_an_exploded_values_commas_and_splits_the_others(self) -> None:
        exploded = {"explode": True, "style": "form"}
        assert WholeValuesParser._resolve_param_duplicates(["a,b", "c"], exploded, "query") == ["a,b", "c"]
        assert WholeValuesParser._split(["a,b", "c"], exploded, "query") == ["a,b", "c"]
        joined = WholeValuesParser._resolve_param_duplicates(["a,b", "c"], {}, "query")
        assert WholeValuesParser._split(joined, {}, "query") == ["a", "b", "c"]

    def test_a_tag_holding_a_comma_is_one_tag_and_include_still_splits(self, api: Api) -> None:
        card = api.post("/v1/cards", json={"content": "x", "tags": ["a,b"]}).json()["card"]
        found = api.get("/v1/cards", params={"tag": "a,b", "include": "content,total"}).json()
        assert [item["id"] for item in found["items"]] == [card["id"]]
        assert found["total"] == 1 and found["items"][0]["content"] == "x"
