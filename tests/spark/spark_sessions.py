"""A local SparkSession for the spark tests: bound to 127.0.0.1, small memory, no UI."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any


def start_spark(master: str, app: str, **conf: str) -> Any:
    """Start (or fail fast) a SparkSession for ``master`` on this machine."""
    import pyspark
    from pyspark.sql import SparkSession

    # Workers must run this interpreter (with this project installed), and local-cluster
    # launches its worker JVMs from SPARK_HOME, which for a pip install is the package dir.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_HOME", str(Path(pyspark.__file__).parent))
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    builder = (
        SparkSession.builder.master(master)
        .appName(app)
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "512m")
        .config("spark.executor.memory", "512m")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.python.worker.reuse", "true")
        .config("spark.ui.showConsoleProgress", "false")
    )
    for key, value in conf.items():
        builder = builder.config(key.replace("_", "."), value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def ship_by_value(module_name: str) -> None:
    """Pickle the functions of a test module by value: Spark's Python workers cannot import
    test modules (they are not on the workers' path), so functions defined at their top level
    travel with the task instead of by name."""
    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[module_name])
