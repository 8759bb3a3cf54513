"""The sidebar's config.json upload: a Hugging Face config (with a ModelOpt checkpoint's hf_quant_config.json in a
second box beside it) becomes the custom model the link carries; a bad file is said in a line, never a traceback.
One file a box, so a session holds at most two uploads of 1 MB."""

from __future__ import annotations

import streamlit as st

QUANT_FILE = "hf_quant_config.json"


def quant_key(config_file) -> str:
    """The hf_quant_config.json box's key, tied to the config.json it belongs with: a new config opens an empty box
    (a ModelOpt file left from the previous upload is not read beside another checkpoint's config)."""
    return f"upload_quant_{config_file.file_id}"


def on_upload() -> None:
    from calc.custom import encode_custom_model
    from calc.errors import UNFORESEEN, InputError, unforeseen
    from calc.loader import parse_config_json, parse_json

    f = st.session_state.get("upload")  # the config.json; its checkpoint's hf_quant_config.json beside it, if given
    if f is None:
        return
    q = st.session_state.get(quant_key(f))
    try:
        quant = parse_json(q.getvalue(), QUANT_FILE) if q is not None else None
        stem = f.name.removesuffix(".json")  # every Hub config is config.json: then its own name (_name_or_path)
        spec = parse_config_json(f.getvalue(), name=None if stem.lower() in ("config", "") else stem, quant=quant)
    except InputError as e:
        st.session_state["upload_error"] = str(e)
        return
    except UNFORESEEN as e:  # a shape no reader foresaw: said in a line, never a traceback in the sidebar
        st.session_state["upload_error"] = f"config.json: {unforeseen(e)}"
        return
    st.session_state["custom_model"] = encode_custom_model(spec)
    st.session_state["model"] = "custom"
    st.session_state.pop("upload_error", None)
