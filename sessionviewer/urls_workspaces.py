"""URLs of the persona editor and memory audit (/workspaces/ and their /api/ twins)."""

urlpatterns: list = []
