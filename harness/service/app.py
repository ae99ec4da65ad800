"""The HTTP API and the public pages, over the service's store.

Handlers are plain ``def`` functions (FastAPI runs them on its thread pool): every one does a
few short statements under the store's lock and never waits for an evaluation.
"""


import datetime
from pathlib import Path
from typing import Annotated, Any

import jinja2
from fastapi import Depends, FastAPI, File, Form, Header, Request, UploadFile
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse
from starlette.exceptions import HTTPException

from harness import __version__
from harness.leaderboard import render
from harness.leaderboard.rank import Board, build_board
from harness.service import jobs, limits
from harness.service.body_cap import BodyCap
from harness.service.db import ServiceDb
from harness.service.limits import Limits, Refused
from harness.service.users import User, authenticate

TEMPLATES = jinja2.Environment(loader=jinja2.FileSystemLoader(Path(__file__).resolve().parent / "templates"),
                               autoescape=True)
MAX_ID = 2**63 - 1  # SQLite's largest integer: a larger id is no submission, not an OverflowError


def _generated_at() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _job_json(job: jobs.Job, position: int | None) -> dict[str, Any]:
    return {"id": job.id, "problem": job.problem, "mode": job.mode, "filename": job.filename, "user": job.user_name,
            "status": job.status, "position": position, "attempts": job.attempts, "created_at": job.created_at,
            "started_at": job.started_at, "finished_at": job.finished_at, "result": job.result}


RUNS_ON = {"cpu": "on the service's CPU (correctness; timing needs a GPU)", "cuda": "on the organizer's GPU",
           None: "on the organizer's machines"}
"""Where the front page says submissions run, by the device the service evaluates on."""


def create_app(db: ServiceDb, settings: Limits, problems: list[str], device: str | None = None) -> FastAPI:
    """The service's routes; ``device``: where its jobs run (cpu, cuda, None: the cluster's workers decide)."""
    app = FastAPI(title="nvfp4-harness submission service", version=__version__, docs_url=None, redoc_url=None)

    @app.exception_handler(Refused)
    def refused(request: Request, error: Refused) -> JSONResponse:
        return JSONResponse({"error": str(error)}, status_code=error.status_code)

    @app.exception_handler(HTTPException)
    def http_error(request: Request, error: HTTPException) -> JSONResponse:
        """Unknown routes and methods answer in the same one-line form."""
        return JSONResponse({"error": f"{request.method} {request.url.path}: {error.detail}"},
                            status_code=error.status_code)

    @app.exception_handler(RequestValidationError)
    def malformed(request: Request, error: RequestValidationError) -> JSONResponse:
        first = error.errors()[0] if error.errors() else {}
        where = ".".join(str(part) for part in first.get("loc", ()) if part != "body")
        return JSONResponse({"error": f"bad request: {where}: {first.get('msg', 'invalid')}"}, status_code=400)

    app.add_middleware(BodyCap, max_file_bytes=settings.max_file_bytes)

    def current_user(authorization: str | None = Header(None)) -> User:
        if not authorization:
            raise Refused(401, "missing token: send 'Authorization: Bearer <token>' "
                               "(the organizer gives one with python -m harness user add)")
        scheme, _, token = authorization.partition(" ")
        user = authenticate(db.connection, token.strip(), db.lock) if scheme.lower() == "bearer" else None
        if user is None:
            raise Refused(401, "token refused: check NVFP4_TOKEN or --token (ask the organizer for a new one)")
        return user

    CurrentUser = Annotated[User, Depends(current_user)]

    def own_job(job_id: int, user: User) -> tuple[jobs.Job, int | None]:
        if not 0 < job_id <= MAX_ID:
            raise Refused(404, f"no submission {job_id} of yours")
        with db.locked() as store:
            job = jobs.get(store.connection, job_id)
            if job is None or job.user_id != user.id:  # someone else's job is as absent as a missing one
                raise Refused(404, f"no submission {job_id} of yours")
            return job, jobs.queue_position(store.connection, job)

    def board(problem: str) -> Board:
        if problem not in problems:
            raise Refused(404, f"unknown problem '{problem}': choose one of {', '.join(problems)}")
        with db.locked() as store:
            return build_board(problem, store.runs(problem))

    @app.post("/submissions")
    def submit(file: Annotated[UploadFile, File()], user: CurrentUser, problem: Annotated[str | None, Form()] = None,
               mode: Annotated[str, Form()] = "test") -> dict[str, Any]:
        source = file.file.read(settings.max_file_bytes + 1)
        limits.check_size(len(source), settings)
        limits.check_mode(mode)
        filename = limits.safe_filename(file.filename)
        text = limits.check_source(source, filename)
        problem = limits.choose_problem(problem, text, problems)
        limits.check_deadline(problem, mode, settings)
        with db.locked() as store:
            limits.check_user_quota(store.connection, user.id, settings)
            job_id = jobs.enqueue(store.connection, user_id=user.id, problem=problem, mode=mode, filename=filename,
                                  source=source)
            job = jobs.get(store.connection, job_id)
            assert job is not None
            return _job_json(job, jobs.queue_position(store.connection, job))

    @app.get("/submissions")
    def mine(user: CurrentUser) -> list[dict[str, Any]]:
        with db.locked() as store:
            return [{k: v for k, v in _job_json(job, None).items() if k != "result"}
                    for job in jobs.of_user(store.connection, user.id)]

    @app.get("/submissions/{job_id}")
    def status(job_id: int, user: CurrentUser) -> dict[str, Any]:
        return _job_json(*own_job(job_id, user))

    @app.get("/submissions/{job_id}/code", response_class=PlainTextResponse)
    def code(job_id: int, user: CurrentUser) -> str:
        return own_job(job_id, user)[0].source.decode()

    @app.get("/leaderboards/{problem}")
    def leaderboard(problem: str, user: CurrentUser) -> dict[str, Any]:
        return render.board_json(board(problem), _generated_at())

    # -- public pages: the leaderboard as the organizer publishes it ---------------------------
    @app.get("/", response_class=HTMLResponse)
    @app.get("/index.html", response_class=HTMLResponse)
    def index(request: Request) -> str:
        boards = [board(p) for p in problems]
        deadlines = {p: d.strftime("%Y-%m-%d %H:%M UTC") for p, d in settings.deadlines.items()}
        return TEMPLATES.get_template("index.html").render(
            boards=boards, deadlines=deadlines, fmt_us=render.fmt_us, version=__version__,
            generated_at=_generated_at(), address=str(request.base_url).rstrip("/"), runs_on=RUNS_ON.get(device))

    @app.get("/{problem}/index.html", response_class=HTMLResponse)
    def problem_page(problem: str) -> str:
        return render.render_html(board(problem), _generated_at())

    @app.get("/{problem}/LEADERBOARD.md", response_class=PlainTextResponse)
    def problem_markdown(problem: str) -> str:
        return render.render_markdown(board(problem), _generated_at())

    @app.get("/{problem}/leaderboard.json")
    def problem_json(problem: str) -> dict[str, Any]:
        return render.board_json(board(problem), _generated_at())

    return app
