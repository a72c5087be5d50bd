"""URLs of the accounts app: sign-in, people, API tokens, the audit log."""

from django.contrib.auth import views as auth_views
from django.urls import path

from .views import audit, signin, tokens, users

app_name = "accounts"

urlpatterns = [
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("password/", signin.PasswordView.as_view(), name="password_change"),
    path("signin/<str:token>/", signin.signin_link, name="signin_link"),
    path("users/", users.user_list, name="user_list"),
    path("users/<int:user_id>/role", users.user_role, name="user_role"),
    path("users/<int:user_id>/active", users.user_active, name="user_active"),
    path("users/<int:user_id>/link", users.user_link, name="user_link"),
    path("tokens/", tokens.token_list, name="token_list"),
    path("tokens/<int:token_id>/revoke", tokens.token_revoke, name="token_revoke"),
    path("audit/", audit.audit_list, name="audit_list"),
]
