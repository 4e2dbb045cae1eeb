"""The original's parameters Homarus declares without having their features (protocol/compat.py):
taken out of the params before the model sees them, kept for the check of the unsupported ones."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError

from homarus.errors import InvalidRequest
from homarus.protocol.compat import Unsupported, check_unsupported, compat_params, inert_of, unsupported_of


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


@compat_params(
    inert={"boardId": "boards are not a feature here"},
    unsupported={"runtime": Unsupported("one runtime only", "default")},
)
class Send(_Closed):
    message: str


@compat_params(inert={"fastMode": "no fast mode here"})
class SendMore(Send):
    extra_flag: bool = False


def test_inert_parameters_are_accepted_and_kept_out_of_the_model() -> None:
    params = Send.model_validate({"message": "hi", "boardId": "b1"})
    assert params.model_dump() == {"message": "hi"}
    check_unsupported("send", params)  # nothing unsupported was given


def test_an_unsupported_parameter_passes_only_with_a_harmless_value() -> None:
    for harmless in (None, "default"):
        check_unsupported("send", Send.model_validate({"message": "hi", "runtime": harmless}))
    params = Send.model_validate({"message": "hi", "runtime": "codex"})
    with pytest.raises(InvalidRequest, match=r"invalid send params: runtime is not supported by Homarus \(one runtime"):
        check_unsupported("send", params)


def test_anything_else_is_still_refused_and_the_caller_s_dict_is_left_alone() -> None:
    given = {"message": "hi", "boardId": "b1", "bogus": 1}
    with pytest.raises(ValidationError, match="bogus"):
        Send.model_validate(given)
    assert given == {"message": "hi", "boardId": "b1", "bogus": 1}


def test_a_subclass_takes_its_own_and_its_base_s_declarations() -> None:
    assert set(inert_of(SendMore)) == {"boardId", "fastMode"} and set(unsupported_of(SendMore)) == {"runtime"}
    params = SendMore.model_validate({"message": "hi", "fastMode": True, "boardId": "x", "runtime": "other"})
    assert isinstance(params, SendMore) and params.model_dump() == {"message": "hi", "extra_flag": False}
    with pytest.raises(InvalidRequest, match="runtime"):
        check_unsupported("send", params)
    with pytest.raises(TypeError, match="declared twice"):
        compat_params(inert={"message": "already a field"})(Send)
