"""The sidebar's config.json upload: a Hugging Face config (with a ModelOpt checkpoint's hf_quant_config.json beside
it) becomes the custom model the link carries; a bad file is said in a line, never a traceback."""

from __future__ import annotations

import streamlit as st

QUANT_FILE = "hf_quant_config.json"


def on_upload() -> None:
    from calc.custom import encode_custom_model
    from calc.errors import UNFORESEEN, InputError, unforeseen
    from calc.loader import parse_config_json, parse_json

    files = st.session_state.get("upload") or []
    files = files if isinstance(files, list) else [files]
    quant_files = [f for f in files if f.name.lower() == QUANT_FILE]
    configs = [f for f in files if f.name.lower() != QUANT_FILE]
    if not configs:
        if quant_files:
            st.session_state["upload_error"] = f"{QUANT_FILE}: upload the checkpoint's config.json with it"
        return
    # the uploader keeps earlier files: the newest config is the one meant, and a quant file is read only beside a
    # config uploaded alone (with two configs there is no telling which checkpoint it came with)
    f = configs[-1]
    try:
        quant = parse_json(quant_files[-1].getvalue(), QUANT_FILE) if quant_files and len(configs) == 1 else None
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
