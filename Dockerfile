# The capacity planner as one container: `docker build -t capacity-planner .` then
#   docker run -p 8501:8501 capacity-planner                                           → http://localhost:8501/
#   docker run -p 8501:8501 -e STREAMLIT_SERVER_BASE_URL_PATH=planner capacity-planner → http://localhost:8501/planner/
# (the second behind a reverse proxy at /planner/; see the README, "Host it for your team").
# Base pinned to a full Python/Debian version; add "@sha256:<digest>" after the tag to pin the exact bytes too.
FROM python:3.11.17-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore
# Settable at `docker run -e …`: the sub-path the page is served under ("" = at /, "planner" = at /planner/).
# Any other Streamlit option works the same way (STREAMLIT_<SECTION>_<KEY>, e.g. STREAMLIT_SERVER_PORT).
ENV STREAMLIT_SERVER_BASE_URL_PATH=""

# An unprivileged user owns nothing in /app; the app only reads its code and spec files.
RUN useradd --create-home --uid 10001 --shell /usr/sbin/nologin planner

WORKDIR /app
# The same install step as .ci/run (requirements.txt pins every version).
COPY requirements.txt ./
RUN pip install --no-cache-dir -r requirements.txt

# Only what the page needs: the code, the spec files and the Streamlit settings (headless, no usage stats,
# minimal toolbar, no error details in the browser).
COPY app.py charts.py chart_layout.py ./
COPY calc/ calc/
COPY boundary/ boundary/
COPY ui/ ui/
COPY hardware_specs/ hardware_specs/
COPY model_specs/ model_specs/
COPY engine_specs/ engine_specs/
# The held-out error of the latency estimates (the bands beside TTFT and TPOT), written by scripts/calibrate.py
# report, beside split.yaml (which runs were held out). The wildcard lets the build pass where errors.json is absent
# (the page then says it has no error table).
COPY tests/data/benchmarks/split.yaml tests/data/benchmarks/errors.jso[n] tests/data/benchmarks/
COPY .streamlit/ .streamlit/

USER planner
EXPOSE 8501
# No curl in the slim image: Python fetches Streamlit's health endpoint (under the sub-path when one is set).
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; p = os.environ.get('STREAMLIT_SERVER_BASE_URL_PATH', '').strip('/'); urllib.request.urlopen('http://localhost:8501/' + (p + '/' if p else '') + '_stcore/health', timeout=4)"]
CMD ["streamlit", "run", "app.py", "--server.address", "0.0.0.0"]
