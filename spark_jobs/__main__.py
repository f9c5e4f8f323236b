"""`python -m spark_jobs JOB ...` / `spark-submit spark_jobs/__main__.py JOB ...`."""
from spark_jobs.cli import app

if __name__ == "__main__":
    app(prog_name="kraftlog spark")
