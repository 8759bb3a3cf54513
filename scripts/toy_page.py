"""The floor the page is measured against (scripts/benchmark.py): Streamlit's own cost for a trivial page — one
URL-bound input, two metrics, one plotly chart — on the same server and in the same browser as the app."""

import plotly.graph_objects as go
import streamlit as st

st.set_page_config(page_title="toy", layout="wide")
c = st.sidebar.number_input("Concurrent requests", min_value=1, max_value=1024, value=16, key="concurrency",
                            bind="query-params")  # fmt: skip
a, b = st.columns(2)
a.metric("Requests", f"{c:,}")
b.metric("Tokens", f"{c * 1280:,}")
st.plotly_chart(go.Figure(dict(data=[dict(type="scatter", x=list(range(1, 65)), y=[c * x for x in range(1, 65)])],
                               layout=dict(title=dict(text="toy"), height=380))), key="toy_chart")  # fmt: skip
