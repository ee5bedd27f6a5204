"""MkDocs hook: the committed figures, which the pages link as ``../figures/``.

The pages live in ``docs/`` and link each figure where it is committed
(``../figures/x.png``), so they read right on GitHub and in an editor.  MkDocs
knows only ``docs/``, and a strict build would call every such link broken;
this hook adds each figure under the name those links resolve to and copies
it to ``figures/`` in the site.  A link to a figure that is not there is still
reported, since only the figures that exist are added.
"""

from __future__ import annotations

from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files, InclusionLevel

REPOSITORY_FOLDERS = ("figures",)


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Add the repository's figures beside the pages."""
    docs = Path(config.docs_dir)
    for folder in REPOSITORY_FOLDERS:
        for path in sorted((docs.parent / folder).glob("*.png")):
            files.append(
                File(
                    f"../{folder}/{path.name}",
                    src_dir=str(docs),
                    dest_dir=config.site_dir,
                    use_directory_urls=config.use_directory_urls,
                    dest_uri=f"{folder}/{path.name}",
                    # MkDocs leaves out paths that start with a dot (``..``).
                    inclusion=InclusionLevel.INCLUDED,
                )
            )
    return files
