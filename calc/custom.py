"""A model that is not shipped travels in a link as one URL-safe string: its ModelSpec fields (defaults
dropped) as compact JSON, zlib-compressed, base64url-encoded. A Llama-sized config is about 250 characters."""

from __future__ import annotations

import base64
import binascii
import json
import zlib

from pydantic import ValidationError

from calc.errors import InputError, describe
from calc.specs import ModelSpec

MAX_DECODED_BYTES = 64_000  # a decompression bomb stops here


def encode_custom_model(m: ModelSpec) -> str:
    data = m.model_dump(exclude_defaults=True, exclude={"source"})
    raw = json.dumps(data, separators=(",", ":"), sort_keys=True).encode()
    return base64.urlsafe_b64encode(zlib.compress(raw, 9)).decode().rstrip("=")


def decode_custom_model(text: str) -> ModelSpec:
    try:
        packed = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        d = zlib.decompressobj()
        raw = d.decompress(packed, MAX_DECODED_BYTES)
        if d.unconsumed_tail:
            raise ValueError("too large")
        data = json.loads(raw)
    except (binascii.Error, zlib.error, ValueError, UnicodeDecodeError, RecursionError):
        raise InputError("custom_model", "not a model encoded by this planner (upload the config.json again)") from None
    if not isinstance(data, dict):
        raise InputError("custom_model", "expected an encoded object of model fields")
    try:
        return ModelSpec.model_validate({**data, "source": "custom model from a shared link"})
    except ValidationError as e:
        raise InputError("custom_model", describe(e)) from None
