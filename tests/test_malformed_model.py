"""Malformed model input (family pattern fields, NAS blocks, quantization groups, wrapper defaults) is refused in one
line naming the field, wherever it arrives: a config.json or a model YAML on the command line, a spec file in the
catalog (skipped, the others load), a ?custom_model= link. Each shape used to raise a TypeError or worse."""

import base64
import json
import shutil
import zlib
from pathlib import Path

import pytest
from properties import run_cli
from properties_hostile import MALFORMED_CONFIG, MALFORMED_SPEC

from calc.custom import decode_custom_model
from calc.errors import InputError
from calc.loader import load_catalog

ROOT = Path(__file__).resolve().parent.parent


def refused(argv: list[str]) -> str:
    code, err = run_cli(argv)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, (code, err)
    return err


@pytest.mark.parametrize("shape", sorted(MALFORMED_CONFIG))
def test_a_config_json_names_the_field(tmp_path, shape):
    config, field = MALFORMED_CONFIG[shape]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    assert field in refused(["plan", "--model", str(path)])


@pytest.mark.parametrize("shape", sorted(MALFORMED_SPEC))
def test_a_model_yaml_names_the_field(tmp_path, shape):
    config, field = MALFORMED_SPEC[shape]
    path = tmp_path / "bad.yaml"
    path.write_text(json.dumps({"name": "M", **config}))  # JSON is YAML
    assert field in refused(["plan", "--model", str(path)])


def test_the_catalog_skips_each_malformed_model_and_loads_the_rest(tmp_path):
    models = tmp_path / "model_specs"
    shutil.copytree(ROOT / "model_specs", models)
    for shape, (config, _) in MALFORMED_SPEC.items():
        (models / f"bad-{shape.lower()}.yaml").write_text(json.dumps({"name": "M", **config}))
    cat = load_catalog(model_dir=models)
    assert set(cat.models) == {p.stem for p in (ROOT / "model_specs").glob("*.yaml")}
    for shape, (_, field) in MALFORMED_SPEC.items():
        said = next(p for p in cat.problems if p.startswith(f"model_specs/bad-{shape.lower()}.yaml: "))
        assert field in said and "\n" not in said, said


@pytest.mark.parametrize("shape", sorted(MALFORMED_SPEC))
def test_a_crafted_custom_model_link_names_the_field(shape):
    config, field = MALFORMED_SPEC[shape]
    raw = json.dumps({"name": "M", **config}).encode()
    link = base64.urlsafe_b64encode(zlib.compress(raw)).decode().rstrip("=")  # as calc.custom encodes
    with pytest.raises(InputError) as e:
        decode_custom_model(link)
    assert e.value.field == "custom_model" and field in str(e.value)
    assert field in refused(["plan", "--model", "custom", "--custom-model", link])


def test_a_model_with_no_attention_or_state_layer_is_refused_by_name():
    """layer_types all 'none' (or every Nemotron-NAS block a no_op): nothing keeps KV or state, and the pool
    arithmetic divided by its zero bytes a request (plan --json: ZeroDivisionError; the page's Compare tab)."""
    from calc.errors import InputError
    from calc.hf_config import model_from_hf_config

    cfg = {"model_type": "llama", "num_hidden_layers": 4, "hidden_size": 512, "num_attention_heads": 8,
           "num_key_value_heads": 8, "intermediate_size": 1024, "vocab_size": 1000, "max_position_embeddings": 8192,
           "layer_types": ["none"] * 4}  # fmt: skip
    with pytest.raises(InputError, match="no layer attends or keeps a state"):
        model_from_hf_config(cfg, name="x")


def test_an_overflowing_mpt_expansion_ratio_is_refused_by_name():
    from calc.errors import InputError
    from calc.hf_config import model_from_hf_config

    cfg = {"model_type": "mpt", "n_layers": 2, "d_model": 4096, "n_heads": 32, "vocab_size": 50432,
           "max_seq_len": 2048, "expansion_ratio": 1e308}  # fmt: skip
    with pytest.raises(InputError, match="expansion_ratio"):
        model_from_hf_config(cfg, name="x")


def _a_reader_that_trips(monkeypatch):
    """A config.json shape no family reader foresaw, as one would surface: a TypeError out of the reader."""
    import calc.loader

    def trips(config, name=None):
        raise TypeError("unhashable type: 'list'")

    monkeypatch.setattr(calc.loader, "model_from_hf_config", trips)


def test_an_unforeseen_reader_error_is_one_line_naming_the_file_on_the_cli(tmp_path, monkeypatch):
    _a_reader_that_trips(monkeypatch)
    path = tmp_path / "odd.json"
    path.write_text(json.dumps({"model_type": "llama"}))
    err = refused(["plan", "--model", str(path)])
    assert err.startswith(f"error: --model: {path}: could not be read (TypeError: unhashable type"), err


def test_an_unforeseen_reader_error_warns_in_the_sidebar_and_keeps_the_model(monkeypatch):
    from conftest import field
    from test_app import run

    _a_reader_that_trips(monkeypatch)
    at = run()
    at.file_uploader(key="upload").upload("config.json", b'{"model_type": "llama"}', "application/json").run()
    assert not at.exception and field(at, "model") == "qwen2.5-7b-instruct"
    assert any(c.value.startswith("config.json: could not be read (TypeError") for c in at.code), [c.value for c in at.code]
