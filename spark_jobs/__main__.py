"""`python -m spark_jobs JOB ...` / `spark-submit spark_jobs/__main__.py JOB ...`.
Kafka errors (a bad bootstrap, an unknown topic) end in one line, as the
kraftlog CLI reports them, also when Spark wraps them in its own exception."""
import sys

from kafka_protocol.errors import KafkaError
from spark_jobs.cli import app, one_line

if __name__ == "__main__":
    from pyspark.errors import PySparkException

    try:
        app(prog_name="kraftlog spark")
    except (KafkaError, PySparkException) as exc:
        print(f"kraftlog spark: error: {one_line(exc)}", file=sys.stderr)
        sys.exit(1)
    except OSError as exc:  # an unreadable --command-config or checkpoint directory
        print(f"kraftlog spark: error: {exc.filename}: {exc.strerror or exc}", file=sys.stderr)
        sys.exit(1)
