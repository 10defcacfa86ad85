"""EnSight Gold cases written by VTK's own `vtkEnSightWriter`, with the times a solver writes."""

from pathlib import Path


def write_ensight(folder, name: str, datasets, times=None) -> Path:
    """A case `folder/name*.case` holding one step per data set of `datasets`; the writer numbers
    the steps 0, 1, ..., so with `times` the case's time values are set to them. Returns the case."""
    import vtk

    folder = Path(folder)
    writer = vtk.vtkEnSightWriter()
    for k, data in enumerate(datasets):
        writer.SetPath(str(folder))
        writer.SetBaseName(name)
        writer.SetInputData(data)
        writer.SetTimeStep(k)
        writer.Write()
    writer.WriteCaseFile(len(datasets))
    case = next(folder.glob(f"{name}*.case"))
    if times is not None:
        lines = case.read_text().splitlines()
        at = lines.index("time values: ")
        case.write_text("\n".join([*lines[: at + 1], " ".join(f"{t:g}" for t in times), *lines[at + 2 :]]) + "\n")
    return case
