// Sign in and sign up.
import { api, setCsrf } from '../api.js';
import { h, field, errorBox } from '../ui.js';
import { app, navigate, loadMe } from '../app.js';

function card(title, form, footer) {
  return h('div', { class: 'auth' },
    h('div', { class: 'auth-card' }, h('div', { class: 'brand big' }, 'Eddy'), h('h1', null, title), form, footer));
}

export function loginPage() {
  const user = h('input', { name: 'username', autocomplete: 'username', required: true, autofocus: true });
  const pass = h('input', { name: 'password', type: 'password', autocomplete: 'current-password', required: true });
  const msg = h('div');
  const form = h('form', {
    onsubmit: async (ev) => {
      ev.preventDefault();
      msg.replaceChildren();
      try {
        const r = await api.post('/api/v1/auth/login', { username: user.value.trim(), password: pass.value });
        setCsrf(r.csrf_token);
        app.me = null;
        await loadMe();
        navigate('/projects');
      } catch (e) { msg.replaceChildren(errorBox(e)); }
    },
  }, field('Username', user), field('Password', pass), msg,
  h('button', { type: 'submit', class: 'primary' }, 'Sign in'));
  return card('Sign in', form, h('p', null, 'New here? ', h('a', { href: '/signup' }, 'Create an account')));
}

export function signupPage() {
  const user = h('input', { name: 'username', autocomplete: 'username', required: true, autofocus: true });
  const email = h('input', { name: 'email', type: 'email', autocomplete: 'email', required: true });
  const pass = h('input', { name: 'password', type: 'password', autocomplete: 'new-password', required: true, minlength: 8 });
  const msg = h('div');
  const form = h('form', {
    onsubmit: async (ev) => {
      ev.preventDefault();
      msg.replaceChildren();
      try {
        await api.post('/api/v1/auth/signup', { username: user.value.trim(), email: email.value.trim(), password: pass.value });
        const r = await api.post('/api/v1/auth/login', { username: user.value.trim(), password: pass.value });
        setCsrf(r.csrf_token);
        await loadMe();
        navigate('/projects');
      } catch (e) { msg.replaceChildren(errorBox(e)); }
    },
  }, field('Username', user), field('Email', email), field('Password (8 characters or more)', pass), msg,
  h('button', { type: 'submit', class: 'primary' }, 'Create account'));
  return card('Create your account', form, h('p', null, 'Have an account? ', h('a', { href: '/login' }, 'Sign in')));
}
