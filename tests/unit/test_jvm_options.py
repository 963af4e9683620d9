"""The test run's JVM options: set once, kept when the user set their own, lifted for the
server with Delta's engine."""

from __future__ import annotations

import os

import pytest

from tests import jvm_options


def test_the_run_gives_its_jvms_the_options_unless_the_variable_was_set() -> None:
    # the root conftest.py applied them (this run did not set the variable itself)
    if os.environ.get(jvm_options.ENV_VAR) == jvm_options.JVM_TEST_OPTIONS:
        assert "-XX:TieredStopAtLevel=1" in os.environ[jvm_options.ENV_VAR]
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(jvm_options.ENV_VAR, "-Xmx1g")
        jvm_options.apply()
        assert os.environ[jvm_options.ENV_VAR] == "-Xmx1g"
        patch.delenv(jvm_options.ENV_VAR)
        jvm_options.apply()
        assert os.environ[jvm_options.ENV_VAR] == jvm_options.JVM_TEST_OPTIONS


def test_java_defaults_lifts_only_the_runs_own_options_and_puts_them_back() -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(jvm_options.ENV_VAR, jvm_options.JVM_TEST_OPTIONS)
        with jvm_options.java_defaults():
            assert jvm_options.ENV_VAR not in os.environ
        assert os.environ[jvm_options.ENV_VAR] == jvm_options.JVM_TEST_OPTIONS
        with pytest.raises(RuntimeError), jvm_options.java_defaults():
            raise RuntimeError("a server that failed to start")
        assert os.environ[jvm_options.ENV_VAR] == jvm_options.JVM_TEST_OPTIONS
        patch.setenv(jvm_options.ENV_VAR, "-Xmx1g")  # the user's own: kept inside too
        with jvm_options.java_defaults():
            assert os.environ[jvm_options.ENV_VAR] == "-Xmx1g"
