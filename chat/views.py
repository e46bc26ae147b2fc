"""The chat's pages: the chat itself at ``/``, login, logout and the first operator account."""

from __future__ import annotations

from django import forms
from django.contrib.auth import get_user_model, login
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import BaseUserCreationForm
from django.http import HttpResponseForbidden
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from agents.access import Caller

from .operators import OperatorSetupClosed, operator_create_first, operator_setup_open


@login_required
def chat_page(request):
    caller = Caller.of(request.user)
    return render(request, "chat/chat.html", {"resource_id": caller.resource_id})


class LoginView(auth_views.LoginView):
    template_name = "login.html"
    redirect_authenticated_user = True

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["setup_open"] = operator_setup_open(self.request.META)
        return context


class LogoutView(auth_views.LogoutView):
    """POST only (Django's rule): a link cannot log anyone out."""


class OperatorForm(BaseUserCreationForm):
    class Meta:
        model = get_user_model()
        fields = ("username",)
        field_classes = {"username": forms.CharField}


@require_http_methods(["GET", "POST"])
def operator_setup(request):
    """Create the first operator account (a superuser) and sign it in: only while no user exists,
    only from this machine, on a loopback-only install (``chat.operators``); 403 otherwise."""
    if not operator_setup_open(request.META):
        return HttpResponseForbidden(render(request, "setup_closed.html").content)
    form = OperatorForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            user = operator_create_first(meta=request.META, username=form.cleaned_data["username"],
                                         password=form.cleaned_data["password1"])
        except OperatorSetupClosed:
            return HttpResponseForbidden(render(request, "setup_closed.html").content)
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        return redirect("chat")
    return render(request, "setup.html", {"form": form})
