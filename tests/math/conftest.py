"""Tests never touch the network: Hugging Face libraries run offline, with an empty cache."""

import atexit
import os
import shutil
import tempfile

_HF_HOME = tempfile.mkdtemp(prefix="gem-test-hf-home-")
atexit.register(shutil.rmtree, _HF_HOME, ignore_errors=True)
os.environ.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", HF_HOME=_HF_HOME)
