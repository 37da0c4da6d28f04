"""The tools of the seam matrix's agent files (copied beside them: an agent file may name the
modules of its own folder).

`lookup` is the one every scenario's approval gate holds; `census` returns a result larger than
the context guard's window; `report` makes an artifact; `area` and `founded` only make the tool
list long enough for tool selection."""

from __future__ import annotations

from jianmu_like import Artifact, tool

CENSUS = "Census of Paris: " + "arrondissement figures " * 400


@tool
def lookup(city: str) -> str:
    """Population of a city.

    Args:
        city: The city's English name.
    """
    return {"Paris": "2.1 million"}.get(city, "unknown")


@tool
def census(city: str) -> str:
    """The whole census of a city (long).

    Args:
        city: The city's English name.
    """
    return CENSUS


@tool
def report(city: str) -> Artifact:
    """Write a population report as an HTML page.

    Args:
        city: The city.
    """
    return Artifact(
        name="report.html", mime_type="text/html", content=f"<h1>{city}</h1>" + "<p>row</p>" * 500
    )


@tool
def area(city: str) -> str:
    """Area of a city in square kilometres.

    Args:
        city: The city's English name.
    """
    return "105 km2"


@tool
def founded(city: str) -> str:
    """When a city was founded.

    Args:
        city: The city's English name.
    """
    return "3rd century BC"
