"""LLM serving capacity planner — Streamlit page. Widgets → Scenario → evaluate() → render."""

import streamlit as st

from calc.evaluate import evaluate
from calc.loader import load_catalog
from calc.scenario import Scenario
from calc.text import verdict

st.set_page_config(page_title="LLM serving capacity planner", layout="wide")


@st.cache_resource
def catalog():
    return load_catalog()


report = evaluate(Scenario(), catalog())
st.title("LLM serving capacity planner")
st.subheader(verdict(report), anchor=False)
