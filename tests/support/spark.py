"""What the Spark tests share besides their session: its configuration and whether Java runs."""

from __future__ import annotations

import os
import shutil
import subprocess

SPARK_CONF = {
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "2",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.memory": "2g",
}


def java_problem() -> str | None:
    """Why Spark cannot start here (None when Java answers)."""
    java = shutil.which("java") or (os.path.join(os.environ["JAVA_HOME"], "bin", "java")
                                    if os.environ.get("JAVA_HOME") else None)
    if not java:
        return "no Java runtime (install openjdk-17-jre-headless: make java)"
    try:
        subprocess.run([java, "-version"], check=True, capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"Java does not run ({type(exc).__name__})"
    return None
